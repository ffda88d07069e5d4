import type { VersionView } from '../../src/services/history-service.js';
/** Deploy history and rollback over real HTTP, real sandboxes, a real SQLite file (spec §4). */
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nodeApp } from '../support/apps.js';
import { deploy, fetchApp } from '../support/deploy.js';
import { call, startTestServer, type TestServer } from '../support/server.js';
import { tarGz } from '../support/tarball.js';

const ALICE = 'alice-history-key-0123456789';
const BOB = 'bob-history-key-0123456789ab';
const keys = [
  { key: ALICE, name: 'alice' },
  { key: BOB, name: 'bob' },
];

type Version = VersionView;

describe('deploy history and rollback', () => {
  let server: TestServer;
  const versions = async (app: string): Promise<Version[]> =>
    (
      (await call(server.baseURL, `/v1/apps/${app}/versions`, { token: ALICE })).body as {
        items: Version[];
      }
    ).items;
  const rollback = (app: string, version: unknown, token = ALICE) =>
    call(server.baseURL, `/v1/apps/${app}/rollback`, { method: 'POST', token, json: { version } });

  beforeAll(async () => {
    server = await startTestServer({ auth: { apiKeys: keys }, runtime: { poolSize: 1 } });
  });
  afterAll(() => server.stop());

  it('rolls back v3 to v1 as a fourth version that serves v1', async () => {
    for (const n of [1, 2, 3]) {
      const res = await deploy(server.baseURL, ALICE, { name: 'site' }, await site(n));
      expect(res.status).toBe(200);
    }
    const before = await versions('site');
    expect(before.map((v) => v.version)).toEqual([3, 2, 1]);

    const res = await rollback('site', 1);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ app_id: 'site', phase: 'Ready', url: expect.any(String) });
    const after = await versions('site');
    expect(after.map((v) => v.version)).toEqual([4, 3, 2, 1]);
    expect(after[0]).toMatchObject({
      version: 4,
      rolled_back_from: 1,
      template: 'static',
      lane: 'fast',
      source_hash: before[2]?.source_hash,
    });
    expect(after[0]?.timestamp).toMatch(/^\d{4}-\d\d-\d\dT.*Z$/);
    expect(after[0]).toMatchObject({ outcome: 'Ready', live: true });
    // History is not rewritten: the older entries are as they were, only no longer live.
    expect(after.slice(1)).toEqual(before.map((v) => ({ ...v, live: false })));
    expect(after.slice(1).every((v) => v.rolled_back_from === undefined)).toBe(true);
    const page = await fetchApp(String((res.body as { url: string }).url));
    expect(page.body).toContain('version one');
  });

  it('takes the previous version back warm: the very process that served it answers', async () => {
    const first = await deploy(server.baseURL, ALICE, { name: 'warm' }, await nodeApp('p1'));
    const url = String(first.body.url);
    const p1 = (await fetchApp(url)).body;
    await deploy(server.baseURL, ALICE, { name: 'warm' }, await nodeApp('p2'));
    const p2 = (await fetchApp(url)).body;
    expect(p2).toMatch(/^p2 /);

    expect((await rollback('warm', 1)).status).toBe(200);
    // Same boot id: not a fresh start of p1's source but the sandbox that served it.
    expect((await fetchApp(url)).body).toBe(p1);
    // And back again: p2's sandbox was kept in turn.
    expect((await rollback('warm', 2)).status).toBe(200);
    expect((await fetchApp(url)).body).toBe(p2);
    // Two versions back is no longer warm: a fresh start of the same source.
    expect((await rollback('warm', 1)).status).toBe(200);
    expect((await rollback('warm', 3)).status).toBe(200);
    const cold = (await fetchApp(url)).body;
    expect(cold).toMatch(/^p1 /);
    expect(cold).not.toBe(p1);
  });

  it('keeps what served serving through a broken deploy; a rollback then restores it', async () => {
    const first = await deploy(server.baseURL, ALICE, { name: 'fixme' }, await nodeApp('good'));
    const url = String(first.body.url);
    const good = (await fetchApp(url)).body;
    const broken = await tarGz({
      'package.json': JSON.stringify({ name: 'fixme', main: 'server.js' }),
      'server.js': 'throw new Error("fixme is broken");',
    });
    const bad = await deploy(server.baseURL, ALICE, { name: 'fixme' }, broken);
    expect(bad.body).toMatchObject({
      code: 'deploy_failed',
      message: expect.stringMatching(/version 1 is still serving$/) as unknown,
      details: { phase: 'Ready', reason: 'AppExited', live_version: 1 },
    });
    expect((await fetchApp(url)).body).toBe(good);
    expect((await versions('fixme'))[0]).toMatchObject({
      version: 2,
      outcome: 'Failed',
      reason: 'AppExited',
      live: false,
    });

    const res = await rollback('fixme', 1);
    expect(res.status).toBe(200);
    expect((await fetchApp(url)).body).toMatch(/^good /);
    expect((await versions('fixme'))[0]).toMatchObject({
      version: 3,
      rolled_back_from: 1,
      outcome: 'Ready',
      live: true,
    });
  });

  it('refuses versions not in the history with unknown_version, leaving it as it was', async () => {
    const before = await versions('site');
    for (const version of [99, 0, -1]) {
      const res = await rollback('site', version);
      expect(res.status, String(version)).toBe(400);
      expect(res.body).toMatchObject({ code: 'unknown_version' });
    }
    for (const version of ['one', 1.5, { n: 1 }]) {
      const res = await rollback('site', version);
      expect(res.status, String(version)).toBe(400);
      expect(res.body).toMatchObject({ code: 'bad_request' });
    }
    const missing = await call(server.baseURL, '/v1/apps/site/rollback', {
      method: 'POST',
      token: ALICE,
      json: {},
    });
    expect(missing).toMatchObject({ status: 400, body: { code: 'bad_request' } });
    expect(await versions('site')).toEqual(before);
  });

  it('is owner-scoped: another user gets 404 for versions and rollback', async () => {
    const list = await call(server.baseURL, '/v1/apps/site/versions', { token: BOB });
    expect(list).toMatchObject({ status: 404, body: { code: 'not_found' } });
    const res = await rollback('site', 1, BOB);
    expect(res).toMatchObject({ status: 404, body: { code: 'not_found' } });
    expect((await call(server.baseURL, '/v1/apps/site/versions')).status).toBe(401);
  });

  it('keeps the newest 20 versions and deletes the pruned ones’ source blobs', async () => {
    for (const n of [1, 2]) {
      expect((await deploy(server.baseURL, ALICE, { name: 'busy' }, await site(n))).status).toBe(
        200,
      );
    }
    // Version 3 runs version 1's source from version 1's blob: none is copied for it.
    expect((await rollback('busy', 1)).status).toBe(200);
    const busyBlobs = () =>
      readdirSync(join(server.dataDir, 'sources')).filter((f) => f.startsWith('busy.'));
    expect(busyBlobs()).toHaveLength(2);
    for (let n = 4; n <= 22; n++) {
      const res = await deploy(server.baseURL, ALICE, { name: 'busy' }, await site(n));
      expect(res.status).toBe(200);
    }
    const items = await versions('busy');
    expect(items.map((v) => v.version)).toEqual(Array.from({ length: 20 }, (_, i) => 22 - i));
    // Versions 1 and 2 are pruned: 2's blob goes, 1's stays for version 3.
    const blobs = busyBlobs();
    expect(blobs).toHaveLength(20);
    expect(blobs.some((f) => f.startsWith('busy.v2.'))).toBe(false);
    expect(blobs.filter((f) => f.startsWith('busy.v1.'))).toHaveLength(1);
    // The oldest kept version can still be restored.
    expect((await rollback('busy', 3)).status).toBe(200);
    expect(
      (await fetchApp(`http://busy.localhost:${new URL(server.baseURL).port}/`)).body,
    ).toContain('version one');
    // 21 deploys and two rollbacks: 23-35 s here at a load average of 19, past the default 30 s.
  }, 180_000);
});

describe('after a restart (SQLite)', () => {
  it('still has the versions and the audit trail', async () => {
    const admin = { key: 'ops-history-key-0123456789', name: 'ops', role: 'admin' as const };
    const config = { auth: { apiKeys: [...keys, admin] }, runtime: { poolSize: 0 } };
    const first = await startTestServer(config);
    await deploy(first.baseURL, ALICE, { name: 'durable' }, await site(1));
    await deploy(first.baseURL, ALICE, { name: 'durable' }, await site(2));
    await call(first.baseURL, '/v1/apps/durable/rollback', {
      method: 'POST',
      token: ALICE,
      json: { version: 1 },
    });
    const versionsBefore = await call(first.baseURL, '/v1/apps/durable/versions', { token: ALICE });
    const auditBefore = await call(first.baseURL, '/v1/audit?app=durable', { token: admin.key });
    expect((auditBefore.body as { events: unknown[] }).events).toHaveLength(3);
    await first.close();

    const second = await startTestServer(config, first.dataDir);
    try {
      const versionsAfter = await call(second.baseURL, '/v1/apps/durable/versions', {
        token: ALICE,
      });
      expect(versionsAfter.body).toEqual(versionsBefore.body);
      expect((versionsAfter.body as { items: Version[] }).items[0]).toMatchObject({
        version: 3,
        rolled_back_from: 1,
      });
      const auditAfter = await call(second.baseURL, '/v1/audit?app=durable', { token: admin.key });
      expect(auditAfter.body).toEqual(auditBefore.body);
    } finally {
      await second.stop();
    }
  });
});

function site(n: number): Promise<Buffer> {
  const words = ['zero', 'one', 'two', 'three'];
  return tarGz({ 'index.html': `<h1>version ${words[n] ?? n}</h1>` });
}
