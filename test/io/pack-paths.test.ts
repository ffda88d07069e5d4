import { chmodSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { buffer } from 'node:stream/consumers';
import { pipeline } from 'node:stream/promises';
import { gunzipSync } from 'node:zlib';
import { extract } from 'tar-stream';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { packPaths } from '../../src/io/pack-paths.js';

let root: string;
beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), 'pack-paths-'));
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

interface Unpacked {
  name: string;
  type: string | null | undefined;
  mode: number | undefined;
  uid: number | undefined;
  linkname: string | null | undefined;
  content: string;
}

async function unpack(gz: Buffer): Promise<Unpacked[]> {
  const entries: Unpacked[] = [];
  const reader = extract();
  reader.on('entry', (header, body, next) => {
    void buffer(body).then((content) => {
      const { name, type, mode, uid, linkname } = header;
      entries.push({ name, type, mode, uid, linkname, content: content.toString() });
      next();
    }, next);
  });
  await pipeline(Readable.from([gunzipSync(gz)]), reader);
  return entries;
}

describe('packPaths', () => {
  it('packs files and links as named, with their modes and no owner', async () => {
    mkdirSync(join(root, 'bin'));
    writeFileSync(join(root, 'bin/run'), '#!/bin/sh\n');
    chmodSync(join(root, 'bin/run'), 0o755);
    writeFileSync(join(root, 'index.js'), 'hello');
    chmodSync(join(root, 'index.js'), 0o644);
    symlinkSync('index.js', join(root, 'main.js'));
    const gz = await buffer(packPaths(root, ['index.js', 'bin/run', 'main.js']));
    expect(await unpack(gz)).toEqual([
      { name: 'index.js', type: 'file', mode: 0o644, uid: 0, linkname: null, content: 'hello' },
      {
        name: 'bin/run',
        type: 'file',
        mode: 0o755,
        uid: 0,
        linkname: null,
        content: '#!/bin/sh\n',
      },
      { name: 'main.js', type: 'symlink', mode: 0o777, uid: 0, linkname: 'index.js', content: '' },
    ]);
  });

  it('fails the stream on a path that is neither a file nor a link', async () => {
    mkdirSync(join(root, 'lib'));
    await expect(buffer(packPaths(root, ['lib']))).rejects.toThrow(/lib: not a file/);
  });
});
