import { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGzip, gzipSync } from 'node:zlib';
import { beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_TARBALL_LIMITS, inspectTarball } from '../../src/sources/tarball.js';
import { tarGz, tarOf } from '../support/tarball.js';
import { expectAppError } from './expect-app-error.js';

const MB = 1024 * 1024;

describe('inspectTarball: entry count', () => {
  const files = (n: number) => Array.from({ length: n }, (_, i) => [`f/${i}.txt`, ''] as const);

  it('accepts exactly 10,000 entries and refuses 10,001', async () => {
    expect(DEFAULT_TARBALL_LIMITS.maxEntries).toBe(10_000);
    const ok = await inspectTarball(await tarGz(files(10_000)));
    expect(ok.entryCount).toBe(10_000);
    expect(ok.files).toHaveLength(10_000);
    const over = await tarGz(files(10_001));
    await expectAppError(() => inspectTarball(over), 400, 'bad_request', 'more than 10000 entries');
  });

  it('counts directories and links towards the limit', async () => {
    const data = await tarGz([
      ['a/', { type: 'dir' }],
      ['a/x', 'x'],
      ['l', { type: 'symlink', target: 'a/x' }],
    ]);
    await expectAppError(
      () => inspectTarball(data, { maxEntries: 2 }),
      400,
      'bad_request',
      'more than 2 entries',
    );
    expect((await inspectTarball(data, { maxEntries: 3 })).entryCount).toBe(3);
  });
});

describe('inspectTarball: size', () => {
  /** 600 MB of zeros gzipped at level 9: about 600 KB. */
  let bomb: Buffer;

  beforeAll(async () => {
    const zeros = Buffer.alloc(MB);
    async function* source() {
      for (let i = 0; i < 600; i += 1) yield zeros;
    }
    const chunks: Buffer[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _encoding, done) {
        chunks.push(chunk);
        done();
      },
    });
    await pipeline(Readable.from(source()), createGzip({ level: 9 }), sink);
    bomb = Buffer.concat(chunks);
  }, 60_000);

  it('refuses a gzip bomb at once, without inflating it into memory', async () => {
    expect(bomb.length).toBeLessThan(MB);
    const { rssBefore, error } = await measured(() => inspectTarball(bomb));
    await expectAppError(
      () => Promise.reject(error),
      413,
      'payload_too_large',
      'more than the limit of 512 MB',
    );
    expect(peakGrowth(rssBefore)).toBeLessThan(200 * MB);
  });

  it('refuses a bomb whose gzip trailer lies about its size, by counting as it inflates', async () => {
    const lying = Buffer.from(bomb);
    lying.writeUInt32LE(4096, lying.length - 4);
    const { rssBefore, error } = await measured(() => inspectTarball(lying));
    await expectAppError(() => Promise.reject(error), 413, 'payload_too_large');
    expect(peakGrowth(rssBefore)).toBeLessThan(200 * MB);
  });

  it('refuses a file whose header alone declares more than the cap', async () => {
    // A header claiming 600 MB followed by almost nothing: refused before any content is read.
    const tar = withDeclaredSize(await tarOf({ big: 'x' }), 600 * MB);
    await expectAppError(() => inspectTarball(gzipSync(tar)), 413, 'payload_too_large');
  });

  it('applies a smaller cap to the sum of file sizes', async () => {
    const data = await tarGz({ a: 'a'.repeat(600), b: 'b'.repeat(600) });
    await expectAppError(
      () => inspectTarball(data, { maxUnpackedBytes: 1000 }),
      413,
      'payload_too_large',
      'more than the limit of 1000 bytes',
    );
    expect((await inspectTarball(data, { maxUnpackedBytes: 1_000_000 })).totalBytes).toBe(1200);
  });

  it('checks the compressed size only when given a limit', async () => {
    const data = await tarGz({ 'index.html': 'x' });
    await expectAppError(
      () => inspectTarball(data, { maxCompressedBytes: 10 }),
      413,
      'payload_too_large',
      `source tarball is ${data.length} bytes`,
    );
    expect((await inspectTarball(data)).files).toEqual(['index.html']);
  });

  it('refuses a package.json over 1 MB instead of reading it into memory', async () => {
    const data = await tarGz({ 'package.json': `{"x":"${'a'.repeat(MB)}"}` });
    await expectAppError(
      () => inspectTarball(data),
      400,
      'bad_request',
      'package.json is larger than',
    );
  });
});

/** Runs the action, keeping its error and the resident memory before it. */
async function measured(action: () => Promise<unknown>) {
  const rssBefore = process.memoryUsage.rss();
  let error: unknown;
  try {
    await action();
  } catch (err) {
    error = err;
  }
  return { rssBefore, error };
}

/** Growth of this process's peak resident memory over a baseline, in bytes. */
function peakGrowth(baseline: number): number {
  return process.resourceUsage().maxRSS * 1024 - baseline;
}

/** Rewrites the first header's size field (and checksum) so it declares `size` bytes. */
function withDeclaredSize(tar: Buffer, size: number): Buffer {
  const out = Buffer.from(tar);
  out.write(`${size.toString(8).padStart(11, '0')}\0`, 124, 12, 'ascii');
  out.fill(0x20, 148, 156);
  let sum = 0;
  for (let i = 0; i < 512; i += 1) sum += out[i] ?? 0;
  out.write(`${sum.toString(8).padStart(6, '0')}\0 `, 148, 8, 'ascii');
  return out;
}
