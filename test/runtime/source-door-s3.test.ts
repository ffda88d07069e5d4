import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openSourceDoor, type SourceDoor } from '../../src/runtime/local/source-door.js';
import { mintSourceKey } from '../../src/sources/keys.js';
import { createS3SourceStore } from '../../src/sources/s3-source-store.js';
import type { SourceStore } from '../../src/sources/source-store.js';
import { MOTO_SETUP_TIMEOUT_MS, startMoto, type Moto } from '../support/moto.js';

/**
 * The local runtime's source door in front of the s3 backend: a sandbox's pull streams the object
 * out of the bucket, and an object store that is down is a 503 to that pull, never a crash.
 */
const TOKEN = 'door-token-0123456789abcdef';
const BUCKET = 'slipway-door';
let moto: Moto;
let store: SourceStore;
let door: SourceDoor;
let dir: string;
const logged: string[] = [];

beforeAll(async () => {
  moto = await startMoto();
  await moto.createBucket(BUCKET);
  store = createS3SourceStore({
    endpoint: moto.endpoint,
    region: 'us-east-1',
    bucket: BUCKET,
    prefix: '',
    forcePathStyle: true,
    presignExpiryMs: 60_000,
    timeoutMs: 3_000,
  });
  dir = mkdtempSync(join(tmpdir(), 'slipway-door-'));
  door = await openSourceDoor({
    path: join(dir, 'sources.sock'),
    token: TOKEN,
    store,
    warmup: Buffer.from('warm'),
    log: (_level, msg, extra) => logged.push(`${msg} ${JSON.stringify(extra)}`),
  });
}, MOTO_SETUP_TIMEOUT_MS);

afterAll(async () => {
  await door?.close();
  await moto?.stop();
  rmSync(dir, { recursive: true, force: true });
});

function pull(key: string): Promise<{ status: number; length?: string; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const req = http.get(
      {
        socketPath: join(dir, 'sources.sock'),
        path: `/internal/sources/${key}.tar.gz`,
        headers: { authorization: `Bearer ${TOKEN}` },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            length: res.headers['content-length'],
            body: Buffer.concat(chunks),
          }),
        );
        res.on('error', reject);
      },
    );
    req.on('error', reject);
  });
}

describe('source door over the s3 backend', () => {
  it('streams the allowed blob from the bucket with its length, and nothing else', async () => {
    const key = mintSourceKey('door', 1);
    const other = mintSourceKey('door', 2);
    const blob = Buffer.alloc(3 * 1024 * 1024 + 5, 3);
    await store.put(key, blob);
    await store.put(other, Buffer.from('another app'));
    door.allow(key);
    const got = await pull(key);
    expect(got.status).toBe(200);
    expect(got.length).toBe(String(blob.length));
    expect(got.body.equals(blob)).toBe(true);
    // A valid key in the bucket that is not this sandbox's inject is not found.
    expect((await pull(other)).status).toBe(404);
  });

  it('answers 404 for an allowed key the bucket does not hold', async () => {
    const key = mintSourceKey('door', 3);
    door.allow(key);
    expect((await pull(key)).status).toBe(404);
  });

  it('answers 503 while the store is down and serves again once it is back', async () => {
    const key = mintSourceKey('door', 4);
    await store.put(key, Buffer.from('after the outage'));
    door.allow(key);
    await moto.stop();
    try {
      const down = await pull(key);
      expect(down.status).toBe(503);
      expect(down.body.toString()).toBe('source store unavailable\n');
      expect(logged.join('\n')).toMatch(/source door: read failed .*could not be reached/);
    } finally {
      await moto.restart();
      await moto.createBucket(BUCKET);
    }
    // moto keeps nothing across its restart: the blob is written again.
    await store.put(key, Buffer.from('after the outage'));
    const back = await pull(key);
    expect(back.status).toBe(200);
    expect(back.body.toString()).toBe('after the outage');
  }, 60_000);
});
