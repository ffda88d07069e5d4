/**
 * What AppService writes to the audit trail for each outcome, on a memory store with the fake
 * runtime (one module's unit test; the e2e tests cover the same over HTTP with real sandboxes).
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Identity } from '../../src/auth/identity.js';
import { parseConfig } from '../../src/config/load.js';
import { AppService } from '../../src/services/app-service.js';
import { AuditTrail } from '../../src/services/audit-trail.js';
import type { DeployMetadata } from '../../src/services/deploy-metadata.js';
import { world, type World } from '../actors/harness.js';
import { tarGz } from '../support/tarball.js';
import { StorageHealth } from '../../src/persistence/storage-health.js';

const alice: Identity = {
  userId: 'apikey-alice',
  name: 'alice',
  role: 'user',
  department: 'eng',
  scopes: [],
  mode: 'apikey',
};
const meta = (name: string): DeployMetadata => ({
  name,
  runtime: {},
  env: [],
  allowedHosts: [],
  ttl: '30m',
});

let w: World;
let apps: AppService;
let trail: AuditTrail;
const site = () => tarGz({ 'index.html': '<p>hi</p>' });
const seen = () =>
  trail
    .list({})
    .map((e) => `${e.action}:${e.target}:${e.outcome}`)
    .reverse();

beforeEach(() => {
  w = world();
  trail = new AuditTrail(w.store);
  const config = parseConfig({ limits: { maxAppsPerOwner: 1 } });
  apps = new AppService({
    store: w.store,
    sourceStore: w.sources,
    registry: w.registry,
    config,
    audit: trail,
    storage: new StorageHealth({
      probes: { database: () => w.store.setMeta('probe', 'x'), 'source store': () => undefined },
    }),
  });
});
afterEach(() => w.registry.stop());

describe('audit outcomes', () => {
  it('records a quota refusal as denied, under the caller’s department', async () => {
    await apps.deploy(alice, meta('first'), await site());
    await expect(apps.deploy(alice, meta('second'), await site())).rejects.toMatchObject({
      code: 'quota_exceeded',
    });
    expect(seen()).toEqual(['deploy:first:ok', 'deploy:second:denied']);
    const [denied] = trail.list({ limit: 1 });
    expect(denied).toMatchObject({ actor: 'apikey-alice', tenant_id: 'eng' });
    expect(denied?.source_hash).toMatch(/^sha256:[0-9a-f]{64}$/);
  });

  it('records bad input as rejected, a start failure as failed, a no-op as noop', async () => {
    await expect(apps.deploy(alice, meta('junk'), Buffer.from('not gzip'))).rejects.toMatchObject({
      status: 400,
    });
    w.runtime.injectScript.push({ code: 1, signal: null, lastLines: ['boom'] });
    const failed = await apps.deploy(alice, meta('junk'), await site());
    expect(failed.app.phase).toBe('Failed');
    await apps.suspend(alice, 'junk'); // Failed: nothing to suspend
    await apps.resume(alice, 'junk'); // not Suspended: nothing to resume
    expect(seen()).toEqual([
      'deploy:junk:rejected',
      'deploy:junk:failed',
      'suspend:junk:noop',
      'resume:junk:noop',
    ]);
    // Each says why: the refusal's error code, the failure's reason; what the app printed stays
    // in its log, out of the trail.
    const [resumed, , deployFailed, rejected] = trail.list({});
    expect(rejected?.details).toMatchObject({ reason: expect.stringMatching(/^[a-z_]+$/) });
    expect(rejected?.details?.message).toBeTruthy();
    expect(deployFailed?.details).toMatchObject({ version: 1, reason: 'AppExited' });
    expect(deployFailed?.details?.message).toMatch(/exited with code 1/);
    expect(deployFailed?.details?.message).not.toContain('boom');
    expect(resumed?.details).toBeUndefined();
  });

  it('syncs a deploy’s rows as they are while its audit event waits for a retry', async () => {
    let synced = 0;
    const { appendAudit } = w.store;
    w.store.syncWritten = () => (synced += 1);
    w.store.appendAudit = () => {
      throw Object.assign(new Error('database or disk is full'), { code: 'SQLITE_FULL' });
    };
    await apps.deploy(alice, meta('late'), await site());
    expect(synced).toBe(1);
    w.store.appendAudit = appendAudit;
    await apps.deploy(alice, meta('late'), await site());
    expect(synced).toBe(1);
  });

  it('records a rollback to a version that does not exist as rejected, as a deploy', async () => {
    await apps.deploy(alice, meta('web'), await site());
    await expect(apps.rollback(alice, 'web', 7)).rejects.toMatchObject({ code: 'unknown_version' });
    const ok = await apps.rollback(alice, 'web', 1);
    expect(ok).toMatchObject({ version: 2, app: { phase: 'Ready' } });
    expect(seen()).toEqual(['deploy:web:ok', 'deploy:web:rejected', 'deploy:web:ok']);
    const [rollback, refused] = trail.list({});
    expect(rollback?.details).toEqual({ version: 2, rollback: { from: 1, to: 1 } });
    expect(refused?.details).toMatchObject({ reason: 'unknown_version' });
    expect(apps.versions(alice, 'web')).toMatchObject([
      { version: 2, rolled_back_from: 1 },
      { version: 1 },
    ]);
  });

  it('keeps the audit list bounded: default 200, at most 1,000', async () => {
    for (let i = 0; i < 1_005; i++) {
      trail.record({
        actor: 'x',
        action: 'suspend',
        target: 'y',
        outcome: 'ok',
        tenantId: 'x',
        sourceHash: '',
      });
    }
    expect(trail.list({})).toHaveLength(200);
    expect(trail.list({ limit: 5_000 })).toHaveLength(1_000);
  });
});
