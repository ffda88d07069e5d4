import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createDiskSourceStore } from '../../src/sources/disk-source-store.js';
import { WRITE_INLINE_MAX } from '../../src/sources/durable-write.js';
import { mintSourceKey } from '../../src/sources/keys.js';
import { expectAppError } from './expect-app-error.js';

let root: string;
let dir: string;

beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), 'slipway-sources-'));
  dir = join(root, 'sources');
});

afterEach(() => rmSync(root, { recursive: true, force: true }));

describe('disk source store', () => {
  it('creates its directory and answers ping', () => {
    const store = createDiskSourceStore(dir);
    expect(existsSync(dir)).toBe(true);
    expect(store.ping()).toBe(true);
    rmSync(dir, { recursive: true });
    expect(store.ping()).toBe(false);
  });

  it('puts, sizes, opens and removes a blob as <dir>/<key>.tar.gz', async () => {
    const store = createDiskSourceStore(dir);
    const key = mintSourceKey('app', 1);
    const data = Buffer.from('not really gzip, the store does not care');
    await store.put(key, data);
    expect(readdirSync(dir)).toEqual([`${key}.tar.gz`]);
    expect(await store.size(key)).toBe(data.length);
    const stream = await store.open(key);
    expect(stream).toBeDefined();
    expect((await readAll(stream as Readable)).equals(data)).toBe(true);
    await store.remove(key);
    expect(await store.size(key)).toBeUndefined();
    expect(await store.open(key)).toBeUndefined();
    expect(readdirSync(dir)).toEqual([]);
  });

  it('reads a blob whole only when it is at most the size asked for', async () => {
    const store = createDiskSourceStore(dir);
    const key = mintSourceKey('app', 4);
    const data = Buffer.from('x'.repeat(100_000));
    await store.put(key, data);
    expect((await store.readWhole(key, 100_000))?.equals(data)).toBe(true);
    expect(await store.readWhole(key, 99_999)).toBeUndefined();
    expect(await store.readWhole(mintSourceKey('app', 5), 100_000)).toBeUndefined();
    expect(await store.readWhole('../escape', 100_000)).toBeUndefined();
  });

  it('treats a missing blob as absent, and removing it as done', async () => {
    const store = createDiskSourceStore(dir);
    const key = mintSourceKey('app', 2);
    expect(await store.size(key)).toBeUndefined();
    expect(await store.open(key)).toBeUndefined();
    expect(await store.readWhole(key, 1024)).toBeUndefined();
    await expect(store.remove(key)).resolves.toBeUndefined();
  });

  it('keeps streaming a blob removed after it was opened', async () => {
    const store = createDiskSourceStore(dir);
    const key = mintSourceKey('app', 3);
    await store.put(key, Buffer.from('payload'));
    const stream = (await store.open(key)) as Readable;
    await store.remove(key);
    expect((await readAll(stream)).toString()).toBe('payload');
  });

  it('refuses keys that are not source keys before touching the filesystem', async () => {
    const store = createDiskSourceStore(dir);
    writeFileSync(join(root, 'secret.tar.gz'), 'secret');
    const tricks = [
      '../secret',
      '/etc/passwd',
      'app.v1.x',
      `app.v1.${'a'.repeat(32)}/../../secret`,
      '',
    ];
    for (const key of tricks) {
      await expectAppError(
        () => store.put(key, Buffer.from('x')),
        400,
        'bad_request',
        'invalid source key',
      );
      await expectAppError(() => store.remove(key), 400, 'bad_request', 'invalid source key');
      expect(await store.open(key)).toBeUndefined();
      expect(await store.size(key)).toBeUndefined();
    }
    expect(readdirSync(dir)).toEqual([]);
    expect(existsSync(join(root, 'secret.tar.gz'))).toBe(true);
  });

  it('replaces a blob whole and sweeps temp files a crash left behind', async () => {
    const key = mintSourceKey('app', 4);
    const first = createDiskSourceStore(dir);
    await first.put(key, Buffer.from('one'));
    await first.put(key, Buffer.from('two, longer'));
    expect(await first.size(key)).toBe('two, longer'.length);
    const leftover = join(dir, `.${key}.deadbeef0000.tmp`);
    writeFileSync(leftover, 'half a blob');
    createDiskSourceStore(dir);
    expect(existsSync(leftover)).toBe(false);
    expect(readdirSync(dir)).toEqual([`${key}.tar.gz`]);
  });

  it('writes a small blob and one past the 1 MiB it writes on its own thread alike: whole, no temp file', async () => {
    const store = createDiskSourceStore(dir);
    const small = Buffer.alloc(WRITE_INLINE_MAX, 3);
    const large = Buffer.alloc(WRITE_INLINE_MAX + 1, 4);
    const [a, b] = [mintSourceKey('app', 6), mintSourceKey('app', 7)];
    await Promise.all([store.put(a, small), store.put(b, large)]);
    expect((await store.readWhole(a, small.length))?.equals(small)).toBe(true);
    expect((await store.readWhole(b, large.length))?.equals(large)).toBe(true);
    expect(readdirSync(dir).sort()).toEqual([`${a}.tar.gz`, `${b}.tar.gz`].sort());
  });

  it('fails a put loudly when the directory is gone, leaving nothing behind', async () => {
    const store = createDiskSourceStore(dir);
    rmSync(dir, { recursive: true });
    await expect(store.put(mintSourceKey('app', 5), Buffer.from('x'))).rejects.toMatchObject({
      code: 'ENOENT',
    });
    const large = Buffer.alloc(WRITE_INLINE_MAX + 1);
    await expect(store.put(mintSourceKey('app', 8), large)).rejects.toMatchObject({
      code: 'ENOENT',
    });
  });
});

async function readAll(stream: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}
