/**
 * A rollback points at the blob of the version it restores instead of copying it: what prune and
 * delete then keep and remove, and a version pruned while its rollback is on its way. AppService
 * on a memory store with the fake runtime (one module's unit test; e2e/history.test.ts covers the
 * same over HTTP with real sandboxes and blobs on disk).
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Identity } from '../../src/auth/identity.js';
import { parseConfig } from '../../src/config/load.js';
import { AppService, HISTORY_CAP } from '../../src/services/app-service.js';
import { StorageHealth } from '../../src/persistence/storage-health.js';
import { AuditTrail } from '../../src/services/audit-trail.js';
import type { DeployMetadata } from '../../src/services/deploy-metadata.js';
import { world, type World } from '../actors/harness.js';
import { tarGz } from '../support/tarball.js';

const alice: Identity = {
  userId: 'apikey-alice',
  name: 'alice',
  role: 'user',
  scopes: [],
  mode: 'apikey',
};
const web: DeployMetadata = { name: 'web', runtime: {}, env: [], allowedHosts: [], ttl: '30m' };
const site = (n: number) => tarGz({ 'index.html': `<p>version ${n}</p>` });

let w: World;
let apps: AppService;
const keyOf = (version: number): string | undefined =>
  w.store.getVersion('web', version)?.sourceKey;
const deploys = async (from: number, to: number): Promise<void> => {
  for (let n = from; n <= to; n += 1) await apps.deploy(alice, web, await site(n));
};

beforeEach(() => {
  w = world();
  apps = new AppService({
    store: w.store,
    sourceStore: w.sources,
    registry: w.registry,
    config: parseConfig({}),
    audit: new AuditTrail(w.store),
    storage: new StorageHealth({
      probes: { database: () => w.store.setMeta('probe', 'x'), 'source store': () => undefined },
    }),
  });
});
afterEach(() => w.registry.stop());

describe('a rollback and the source blobs', () => {
  it('points at the restored version’s blob; prune keeps it while any version points at it', async () => {
    await deploys(1, 2);
    const v1 = keyOf(1) as string;
    expect(await apps.rollback(alice, 'web', 1)).toMatchObject({ version: 3 });
    expect(keyOf(3)).toBe(v1);
    expect(w.sources.blobs.size).toBe(2);

    // Versions 1 and 2 fall out of the history; version 3 still runs version 1's source.
    await deploys(4, HISTORY_CAP + 2);
    expect(keyOf(1)).toBeUndefined();
    expect(w.sources.blobs.has(v1)).toBe(true);
    expect(w.sources.blobs.has(keyOf(2) ?? 'pruned')).toBe(false);
    expect(w.sources.blobs.size).toBe(HISTORY_CAP);

    // The rollback to version 3 prunes it; the new head points at the blob in its place.
    expect(await apps.rollback(alice, 'web', 3)).toMatchObject({ app: { phase: 'Ready' } });
    expect(keyOf(3)).toBeUndefined();
    expect(keyOf(HISTORY_CAP + 3)).toBe(v1);
    expect(w.sources.blobs.size).toBe(HISTORY_CAP);
    await apps.delete(alice, 'web');
    expect(w.sources.blobs.size).toBe(0);
  });

  it('refuses a rollback whose version was pruned on its way, and writes no row for it', async () => {
    await deploys(1, 2);
    const v1 = keyOf(1) as string;
    // Another request prunes version 1 while this rollback looks at its blob.
    const size = w.sources.size.bind(w.sources);
    w.sources.size = async (key) => {
      const found = await size(key);
      w.store.pruneVersions('web', 1);
      return found;
    };
    await expect(apps.rollback(alice, 'web', 1)).rejects.toMatchObject({
      status: 400,
      code: 'unknown_version',
    });
    expect(w.store.listVersions('web').map((v) => v.version)).toEqual([2]);
    expect(w.store.hasSourceKey(v1)).toBe(false);
  });

  it('refuses a rollback whose blob is gone, as before', async () => {
    await deploys(1, 2);
    w.sources.blobs.delete(keyOf(1) as string);
    await expect(apps.rollback(alice, 'web', 1)).rejects.toMatchObject({
      code: 'unknown_version',
      message: expect.stringContaining('source of version 1 of web is gone'),
    });
    expect(w.store.listVersions('web').map((v) => v.version)).toEqual([2, 1]);
  });
});
