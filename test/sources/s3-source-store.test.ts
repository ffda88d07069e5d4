import type { Readable } from 'node:stream';
import {
  DeleteObjectCommand,
  GetObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
} from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isStorageFault, ObjectStoreFault } from '../../src/persistence/storage-faults.js';
import { mintSourceKey } from '../../src/sources/keys.js';
import {
  createS3SourceStore,
  type S3SourceStoreOptions,
} from '../../src/sources/s3-source-store.js';
import type { SourceStore } from '../../src/sources/source-store.js';
import { MOTO_CREDENTIALS, MOTO_SETUP_TIMEOUT_MS, startMoto, type Moto } from '../support/moto.js';
import { expectAppError } from './expect-app-error.js';

const BUCKET = 'slipway-sources';
let moto: Moto;

beforeAll(async () => {
  moto = await startMoto();
  await moto.createBucket(BUCKET);
}, MOTO_SETUP_TIMEOUT_MS);

afterAll(async () => moto?.stop());

const storeFor = (over: Partial<S3SourceStoreOptions> = {}): SourceStore =>
  createS3SourceStore({
    endpoint: moto.endpoint,
    region: 'us-east-1',
    bucket: BUCKET,
    prefix: 'test/sources/',
    forcePathStyle: true,
    presignExpiryMs: 300_000,
    timeoutMs: 5_000,
    ...over,
  });

describe('S3 source store (moto)', () => {
  it('puts, sizes, opens and removes a blob as <prefix><key>.tar.gz', async () => {
    const store = storeFor();
    expect(store.backend).toBe('s3');
    const key = mintSourceKey('app', 1);
    const data = Buffer.from('not really gzip, the store does not care');
    await store.put(key, data);
    const listed = await moto.client.send(
      new ListObjectsV2Command({ Bucket: BUCKET, Prefix: 'test/sources/' }),
    );
    expect(listed.Contents?.map((o) => o.Key)).toContain(`test/sources/${key}.tar.gz`);
    expect(await store.size(key)).toBe(data.length);
    expect((await readAll(await store.open(key))).equals(data)).toBe(true);
    await store.remove(key);
    expect(await store.size(key)).toBeUndefined();
    expect(await store.open(key)).toBeUndefined();
  });

  it('treats a missing blob as absent, and removing it as done', async () => {
    const store = storeFor();
    const key = mintSourceKey('app', 2);
    expect(await store.size(key)).toBeUndefined();
    expect(await store.open(key)).toBeUndefined();
    await expect(store.remove(key)).resolves.toBeUndefined();
  });

  it('lists only source blobs under its prefix, paging past 1000 objects', async () => {
    const store = storeFor({ prefix: 'listing/' });
    const keys = [mintSourceKey('one', 1), mintSourceKey('two', 7)];
    for (const key of keys) await store.put(key, Buffer.from(key));
    // Things that are not blobs: a foreign file under the prefix, a blob under another prefix.
    await moto.client.send(
      new PutObjectCommand({ Bucket: BUCKET, Key: 'listing/notes.txt', Body: 'x' }),
    );
    await storeFor({ prefix: 'elsewhere/' }).put(mintSourceKey('three', 1), Buffer.from('x'));
    // Past one page of ListObjectsV2: objects that are not blobs, to page through.
    await Promise.all(
      Array.from({ length: 1_001 }, (_, i) =>
        moto.client.send(
          new PutObjectCommand({
            Bucket: BUCKET,
            Key: `listing/filler/${i}.tar.gz`,
            Body: Buffer.from('f'),
          }),
        ),
      ),
    );
    const late = mintSourceKey('zzz', 1);
    await store.put(late, Buffer.from('last of the listing'));
    const blobs = await store.list();
    expect(blobs.map((b) => b.key).sort()).toEqual([...keys, late].sort());
    const [first] = blobs.filter((b) => b.key === keys[0]);
    expect(first?.bytes).toBe(keys[0]?.length);
    expect(Math.abs((first?.modifiedAt ?? 0) - Date.now())).toBeLessThan(120_000);
  }, 120_000);

  it('refuses keys that are not source keys before calling the store', async () => {
    const store = storeFor();
    for (const key of ['../secret', 'app.v1.x', `app.v1.${'a'.repeat(32)}/../x`, '']) {
      await expectAppError(() => store.put(key, Buffer.from('x')), 400, 'bad_request');
      await expectAppError(() => store.remove(key), 400, 'bad_request');
      await expectAppError(() => store.presignGet?.(key), 400, 'bad_request');
      expect(await store.open(key)).toBeUndefined();
      expect(await store.size(key)).toBeUndefined();
    }
  });

  it('pings and probes the bucket: up for a bucket that exists, down for one that does not', async () => {
    const store = storeFor();
    const missing = storeFor({ bucket: 'no-such-bucket' });
    await waitFor(() => missing.ping() === false);
    expect(store.ping()).toBe(true);
    expect(() => store.probe()).not.toThrow();
    let fault: unknown;
    try {
      missing.probe();
    } catch (err) {
      fault = err;
    }
    expect(fault).toBeInstanceOf(ObjectStoreFault);
    expect(isStorageFault(fault)).toBe(true);
    expect((fault as Error).message).toMatch(/HTTP 404/);
  });

  it('hands out a short-lived pre-signed URL that serves the bytes without credentials', async () => {
    const store = storeFor({ presignExpiryMs: 2_000 });
    const key = mintSourceKey('signed', 1);
    const data = Buffer.from('the agent pulls this');
    await store.put(key, data);
    const url = new URL((await store.presignGet?.(key)) ?? '');
    expect(url.pathname).toBe(`/${BUCKET}/test/sources/${key}.tar.gz`);
    // Signed for the expiry configured, from now: the store enforces it (moto 5.2.5 does not
    // check X-Amz-Expires, so its lapse cannot be shown here; the signature covers it).
    expect(url.searchParams.get('X-Amz-Expires')).toBe('2');
    const signedAt = Date.parse(
      (url.searchParams.get('X-Amz-Date') ?? '').replace(
        /^(\d{4})(\d\d)(\d\d)T(\d\d)(\d\d)(\d\d)Z$/,
        '$1-$2-$3T$4:$5:$6Z',
      ),
    );
    expect(Math.abs(signedAt - Date.now())).toBeLessThan(60_000);
    expect(url.searchParams.get('X-Amz-Signature')).toMatch(/^[0-9a-f]{64}$/);
    expect(url.searchParams.get('X-Amz-Credential')).toMatch(
      new RegExp(`^${MOTO_CREDENTIALS.AWS_ACCESS_KEY_ID}/\\d{8}/us-east-1/s3/aws4_request$`),
    );
    expect(url.href).not.toContain(MOTO_CREDENTIALS.AWS_SECRET_ACCESS_KEY);
    // A plain GET, no credentials of its own: what an agent in a pod does.
    const res = await fetch(url);
    expect(res.status).toBe(200);
    expect(Buffer.from(await res.arrayBuffer()).equals(data)).toBe(true);
    await store.remove(key);
    expect((await fetch(url)).status).toBe(404);
  });

  it('caps a pre-signed URL at the configured expiry, rounded to whole seconds', async () => {
    const url = new URL((await storeFor().presignGet?.(mintSourceKey('signed', 2))) ?? '');
    expect(url.searchParams.get('X-Amz-Expires')).toBe('300');
  });

  it('reads back a small blob it just wrote from memory, and a removed one not at all', async () => {
    const store = storeFor();
    const key = mintSourceKey('recent', 1);
    const data = Buffer.from('a small source, injected right after its upload');
    await store.put(key, data);
    // Gone from the bucket behind the store's back: only the copy the put kept can answer.
    await moto.client.send(
      new DeleteObjectCommand({ Bucket: BUCKET, Key: `test/sources/${key}.tar.gz` }),
    );
    expect((await store.readWhole(key, 1024))?.equals(data)).toBe(true);
    expect(await store.readWhole(key, data.length - 1)).toBeUndefined();
    await store.remove(key);
    expect(await store.readWhole(key, 1024)).toBeUndefined();
  });

  it('reads a blob another process wrote from the bucket', async () => {
    const store = storeFor();
    const key = mintSourceKey('elsewhere', 1);
    const data = Buffer.from('written by another replica');
    await moto.client.send(
      new PutObjectCommand({ Bucket: BUCKET, Key: `test/sources/${key}.tar.gz`, Body: data }),
    );
    expect((await store.readWhole(key, 1024))?.equals(data)).toBe(true);
    expect(await store.readWhole(key, data.length - 1)).toBeUndefined();
  });

  it('streams a blob whole, the same bytes the bucket holds', async () => {
    const store = storeFor();
    const key = mintSourceKey('large', 1);
    const data = Buffer.alloc(5 * 1024 * 1024 + 17, 7);
    await store.put(key, data);
    const stored = await moto.client.send(
      new GetObjectCommand({ Bucket: BUCKET, Key: `test/sources/${key}.tar.gz` }),
    );
    expect(stored.ContentLength).toBe(data.length);
    expect((await readAll(await store.open(key))).equals(data)).toBe(true);
  });
});

describe('S3 source store faults (moto stopped)', () => {
  it('fails every call with a storage fault naming no secret, and works again once back', async () => {
    const store = storeFor({ timeoutMs: 3_000 });
    const key = mintSourceKey('faulty', 1);
    await store.put(key, Buffer.from('before'));
    await moto.stop();
    try {
      const failures = await Promise.allSettled([
        store.put(mintSourceKey('faulty', 2), Buffer.from('x')),
        store.open(key),
        store.size(key),
        store.remove(key),
        store.list(),
      ]);
      for (const failure of failures) {
        expect(failure.status).toBe('rejected');
        const reason = (failure as PromiseRejectedResult).reason as Error;
        expect(reason).toBeInstanceOf(ObjectStoreFault);
        expect(isStorageFault(reason)).toBe(true);
        expect(reason.message).toMatch(/^the object store (could not be reached|did not answer)/);
        expect(reason.message).not.toContain(MOTO_CREDENTIALS.AWS_ACCESS_KEY_ID);
      }
      expect(store.ping()).toBe(false);
      expect(() => store.probe()).toThrow(ObjectStoreFault);
    } finally {
      await moto.restart();
      await moto.createBucket(BUCKET);
    }
    await waitFor(() => store.ping());
    expect(() => store.probe()).not.toThrow();
    await store.put(key, Buffer.from('after'));
    expect((await readAll(await store.open(key))).toString()).toBe('after');
  }, 60_000);

  it('bounds a call to a store that accepts and never answers', async () => {
    const { createServer } = await import('node:net');
    const silent = createServer(() => {});
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const address = silent.address();
    const port = typeof address === 'object' && address ? address.port : 0;
    try {
      // Without the bound this would wait for the test's own timeout.
      const store = storeFor({ endpoint: `http://127.0.0.1:${port}`, timeoutMs: 500 });
      await expect(store.put(mintSourceKey('silent', 1), Buffer.from('x'))).rejects.toThrow(
        /the object store did not answer/,
      );
    } finally {
      silent.close();
    }
  });
});

async function readAll(stream: Readable | undefined): Promise<Buffer> {
  expect(stream).toBeDefined();
  const chunks: Buffer[] = [];
  for await (const chunk of stream as Readable) chunks.push(Buffer.from(chunk as Uint8Array));
  return Buffer.concat(chunks);
}

async function waitFor(ok: () => boolean, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!ok()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
