import { Readable } from 'node:stream';
import { createGunzip } from 'node:zlib';
import { extract } from 'tar-stream';
import { describe, expect, it } from 'vitest';
import { packTarGz } from '../../web/src/lib/tar.js';

/** Unpacks with tar-stream (what a server-side reader sees): path, type and content of each entry. */
async function unpack(blob: Blob): Promise<{ path: string; type: string; body: string }[]> {
  const entries: { path: string; type: string; body: string }[] = [];
  const reader = extract();
  const done = new Promise<void>((resolve, reject) => {
    reader.on('entry', (header, stream, next) => {
      const chunks: Buffer[] = [];
      stream.on('data', (c: unknown) => chunks.push(c as Buffer));
      stream.on('end', () => {
        entries.push({
          path: header.name,
          type: String(header.type),
          body: Buffer.concat(chunks).toString(),
        });
        next();
      });
    });
    reader.on('finish', resolve);
    reader.on('error', reject);
  });
  Readable.from(Buffer.from(await blob.arrayBuffer()))
    .pipe(createGunzip())
    .pipe(reader);
  await done;
  return entries;
}

describe('packTarGz (the dashboard packs a folder in the browser)', () => {
  it('round-trips paths, contents and sizes that are not multiples of 512', async () => {
    const long = `${'deep/'.repeat(30)}file.txt`;
    const files = [
      { path: 'index.html', file: new Blob(['<p>hi</p>']) },
      { path: 'empty.txt', file: new Blob([]) },
      { path: 'block.bin', file: new Blob(['x'.repeat(512)]) },
      { path: 'ünïcode/naïve.txt', file: new Blob(['é']) },
      { path: long, file: new Blob(['far down']) },
    ];
    const blob = await packTarGz(files);
    const entries = await unpack(blob);
    expect(entries).toEqual([
      { path: 'index.html', type: 'file', body: '<p>hi</p>' },
      { path: 'empty.txt', type: 'file', body: '' },
      { path: 'block.bin', type: 'file', body: 'x'.repeat(512) },
      { path: 'ünïcode/naïve.txt', type: 'file', body: 'é' },
      { path: long, type: 'file', body: 'far down' },
    ]);
  });

  it('refuses a path that fits neither the name nor the prefix field instead of cutting it', async () => {
    const unsplittable = `${'a'.repeat(101)}`;
    await expect(packTarGz([{ path: unsplittable, file: new Blob(['x']) }])).rejects.toThrow(
      /path too long/,
    );
    const tooDeep = `${'d'.repeat(150)}/${'e'.repeat(20)}/${'f'.repeat(90)}`;
    await expect(packTarGz([{ path: tooDeep, file: new Blob(['x']) }])).rejects.toThrow(
      /path too long/,
    );
  });
});
