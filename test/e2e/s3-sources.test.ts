/**
 * `sources.backend: s3` end to end: the real server with its source blobs in moto's S3, real
 * sandboxes pulling them through the local runtime's door, and nothing served at /internal/sources.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { GetObjectCommand, ListObjectsV2Command } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deploy, fetchApp } from '../support/deploy.js';
import { MOTO_SETUP_TIMEOUT_MS, startMoto, type Moto } from '../support/moto.js';
import { call, startTestServer, type TestServer } from '../support/server.js';
import { tarGzDir } from '../support/tarball.js';

const ALICE = 'alice-s3-sources-key-0123456789';
const BUCKET = 'slipway-e2e-sources';
const PREFIX = 'e2e/sources/';

describe('source blobs in an S3-compatible store (moto)', () => {
  let moto: Moto;
  let server: TestServer;

  beforeAll(async () => {
    moto = await startMoto();
    await moto.createBucket(BUCKET);
    server = await startTestServer({
      auth: { apiKeys: [{ key: ALICE, name: 'alice' }] },
      runtime: { poolSize: 1 },
      sources: {
        backend: 's3',
        s3: { endpoint: moto.endpoint, bucket: BUCKET, prefix: PREFIX, forcePathStyle: true },
      },
    });
  }, MOTO_SETUP_TIMEOUT_MS);

  afterAll(async () => {
    await server?.stop();
    await moto?.stop();
  });

  /** The bucket's objects under the prefix, by source key. */
  const stored = async (): Promise<Map<string, number>> => {
    const page = await moto.client.send(
      new ListObjectsV2Command({ Bucket: BUCKET, Prefix: PREFIX }),
    );
    return new Map(
      (page.Contents ?? []).map((o) => [
        (o.Key ?? '').slice(PREFIX.length).replace(/\.tar\.gz$/, ''),
        o.Size ?? 0,
      ]),
    );
  };
  const keysOf = async (app: string): Promise<string[]> =>
    [...(await stored()).keys()].filter((key) => key.startsWith(`${app}.v`));

  it.each([
    ['static', 'Hello from a static Slipway app'],
    ['node', 'hello from node'],
  ])('deploys the %s example from the bucket, and the app serves', async (example, expected) => {
    const source = await tarGzDir(join('examples', example));
    const name = `s3-${example}`;
    const res = await deploy(server.baseURL, ALICE, { name }, source);
    expect(res.status).toBe(200);
    const page = await fetchApp(String(res.body.url));
    expect(page.status).toBe(200);
    expect(page.body).toContain(expected);
    // The blob is the upload, byte for byte, in the bucket and nowhere on the data dir.
    const [key] = await keysOf(name);
    expect(key).toMatch(new RegExp(`^${name}\\.v1\\.[0-9a-f]{32}$`));
    const object = await moto.client.send(
      new GetObjectCommand({ Bucket: BUCKET, Key: `${PREFIX}${key}.tar.gz` }),
    );
    const bytes = Buffer.from((await object.Body?.transformToByteArray()) ?? []);
    expect(bytes.equals(source)).toBe(true);
    expect(existsSync(join(server.dataDir, 'sources'))).toBe(false);
  });

  it('serves nothing at /internal/sources, not even to the agents, for a blob that exists', async () => {
    const [key] = await keysOf('s3-static');
    expect(key).toBeDefined();
    const agentToken = server.app.deploy.agentToken;
    for (const method of ['GET', 'HEAD'] as const) {
      const res = await call(server.baseURL, `/internal/sources/${key}.tar.gz`, {
        method,
        token: agentToken,
      });
      expect(res.status, method).toBe(404);
      if (method === 'GET') expect(res.body).toMatchObject({ code: 'not_found' });
    }
  });

  it("redeploys and rolls back from the bucket: the rollback runs version 1's object, not a copy", async () => {
    const name = 's3-history';
    const first = await tarGzDir('examples/static');
    const second = await tarGzDir('examples/node');
    expect((await deploy(server.baseURL, ALICE, { name }, first)).status).toBe(200);
    expect((await deploy(server.baseURL, ALICE, { name }, second)).status).toBe(200);
    const back = await call(server.baseURL, `/v1/apps/${name}/rollback`, {
      method: 'POST',
      token: ALICE,
      json: { version: 1 },
    });
    expect(back.status).toBe(200);
    const page = await fetchApp(String((back.body as { url: string }).url));
    expect(page.body).toContain('Hello from a static Slipway app');
    const keys = await keysOf(name);
    expect(keys.map((k) => k.split('.')[1]).sort()).toEqual(['v1', 'v2']);
  });

  it('reports the bucket in /readyz, and deleting an app removes its blobs from the bucket', async () => {
    const ready = await call(server.baseURL, '/readyz', { token: ALICE });
    expect(ready.status).toBe(200);
    expect(await keysOf('s3-history')).toHaveLength(2);
    const gone = await call(server.baseURL, '/v1/apps/s3-history', {
      method: 'DELETE',
      token: ALICE,
    });
    expect(gone.status).toBeLessThan(300);
    await waitFor(async () => (await keysOf('s3-history')).length === 0);
    expect(await keysOf('s3-static')).toHaveLength(1);
  });
});

async function waitFor(ok: () => Promise<boolean>, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await ok())) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
