import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nodeApp } from '../support/apps.js';
import { deploy, fetchApp } from '../support/deploy.js';
import { MOTO_CREDENTIALS, MOTO_SETUP_TIMEOUT_MS, startMoto, type Moto } from '../support/moto.js';
import { freePort, startServerProcess, type ServerProcess } from '../support/server-process.js';

/**
 * The object store behind `sources.backend: s3` goes away and comes back, under the real server
 * process configured only through SVC_SOURCES_* and the SDK's credential variables: a deploy is
 * refused with 503 storage_unavailable naming the source store (never a 500), /readyz turns 503,
 * the apps already running keep serving, and deploys work again once the store is back.
 */
const KEY = `s3-admin-${randomBytes(16).toString('hex')}`;
const BUCKET = 'slipway-outage';
const root = mkdtempSync(join(tmpdir(), 'slipway-s3-outage-'));
let moto: Moto;
let server: ServerProcess;

beforeAll(async () => {
  moto = await startMoto();
  await moto.createBucket(BUCKET);
  server = await startServerProcess({
    dataDir: join(root, 'data'),
    port: await freePort(),
    env: {
      SVC_AUTH_API_KEY: KEY,
      SVC_SOURCES_BACKEND: 's3',
      SVC_SOURCES_S3_ENDPOINT: moto.endpoint,
      SVC_SOURCES_S3_BUCKET: BUCKET,
      SVC_SOURCES_S3_FORCE_PATH_STYLE: 'true',
      SVC_SOURCES_S3_TIMEOUT: '3s',
      ...MOTO_CREDENTIALS,
    },
    config: { runtime: { poolSize: 1 } },
    readyTimeoutMs: 90_000,
  });
}, MOTO_SETUP_TIMEOUT_MS);

afterAll(async () => {
  await server?.stop('SIGKILL');
  await moto?.stop();
  rmSync(root, { recursive: true, force: true });
});

async function api(path: string): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(`${server.baseURL}${path}`, {
    headers: { authorization: `Bearer ${KEY}` },
  });
  const text = await res.text();
  return { status: res.status, body: text ? (JSON.parse(text) as Record<string, unknown>) : {} };
}

const sourcesCheck = async (): Promise<{ ok?: boolean; detail?: string } | undefined> => {
  const { body } = await api('/readyz');
  const components = (body.components ??
    (body.details as { components?: unknown } | undefined)?.components) as
    Record<string, { ok?: boolean; detail?: string }> | undefined;
  return components?.sources;
};

describe('the object store of the sources goes away', () => {
  it('refuses deploys with 503 naming the source store, reports not ready, and recovers', async () => {
    const before = await deploy(server.baseURL, KEY, { name: 'before' }, await nodeApp('v1'));
    expect(before.status, JSON.stringify(before.body)).toBe(200);
    const second = await deploy(server.baseURL, KEY, { name: 'before' }, await nodeApp('v2'));
    expect(second.status, JSON.stringify(second.body)).toBe(200);

    await moto.stop();
    // The first to meet the outage: a rollback reading v1's source (the store is not known to be
    // down yet, so the read itself fails).
    const rollback = await fetch(`${server.baseURL}/v1/apps/before/rollback`, {
      method: 'POST',
      headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({ version: 1 }),
    });
    expect(rollback.status).toBe(503);
    expect(rollback.headers.get('retry-after')).toBe('5');
    expect(await rollback.json()).toMatchObject({
      code: 'storage_unavailable',
      details: { store: 'source store' },
    });
    const refused = await deploy(server.baseURL, KEY, { name: 'during' }, await nodeApp('d1'));
    expect(refused.status, JSON.stringify(refused.body)).toBe(503);
    expect(refused.body).toMatchObject({
      code: 'storage_unavailable',
      message: expect.stringMatching(
        /^the source store cannot write: the object store could not be reached \(ECONNREFUSED\)/,
      ),
      details: { store: 'source store', retryAfterSeconds: 5 },
    });
    // While it is known down, other deploys are refused at once, the same way.
    const again = await deploy(server.baseURL, KEY, { name: 'before' }, await nodeApp('v3'));
    expect(again.status).toBe(503);
    expect(again.body.code).toBe('storage_unavailable');

    expect((await api('/readyz')).status).toBe(503);
    expect(await sourcesCheck()).toMatchObject({ ok: false });
    // The app already running has its source in its sandbox: it keeps serving.
    const live = await fetchApp(`http://before.localhost:${server.port}/`);
    expect(live.body).toContain('v2');
    const app = await api('/v1/apps/during');
    expect(app.status).toBe(404);

    // Back (empty: moto keeps nothing across a restart, so the bucket is made again).
    await moto.restart();
    await moto.createBucket(BUCKET);
    await expectSoon(async () => (await api('/readyz')).status === 200, 10_000);
    const after = await deploy(server.baseURL, KEY, { name: 'after' }, await nodeApp('v4'));
    expect(after.status, JSON.stringify(after.body)).toBe(200);
    expect((await fetchApp(String(after.body.url))).body).toContain('v4');

    // Nothing the SDK was given to sign with reached the log.
    const log = server.output().join('\n');
    expect(log).toContain('source store cannot write');
    expect(log).not.toContain(MOTO_CREDENTIALS.AWS_SECRET_ACCESS_KEY);
    expect(log).not.toMatch(/X-Amz-Signature/i);
  }, 120_000);
});

async function expectSoon(ok: () => Promise<boolean>, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await ok())) {
    if (Date.now() > deadline) throw new Error(`not within ${ms} ms`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
