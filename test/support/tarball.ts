import { lstat, readFile, readdir, readlink } from 'node:fs/promises';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { gzipSync } from 'node:zlib';
import tar, { type Pack } from 'tar-stream';

type Header = Parameters<Pack['entry']>[0];

/**
 * Builds tarballs for tests and benchmarks, good and bad alike: names are written exactly as given
 * (absolute, `..`), and any entry type can be made. Output is deterministic (fixed mtime, owner,
 * modes, order), so the same input always hashes the same.
 */
export type TarEntry =
  | string
  | Buffer
  | { type: 'file'; content?: string | Buffer; mode?: number }
  | { type: 'dir'; mode?: number }
  | { type: 'symlink'; target: string }
  | { type: 'hardlink'; target: string }
  | { type: 'character-device' | 'block-device' | 'fifo' };

/** Record keys keep insertion order unless they look like integers; use pairs to be certain. */
export type TarEntries = Record<string, TarEntry> | ReadonlyArray<readonly [string, TarEntry]>;

/** A gzipped tar of the entries, in order. */
export async function tarGz(
  entries: TarEntries,
  options: { level?: number } = {},
): Promise<Buffer> {
  return gzipSync(await tarOf(entries), { level: options.level ?? 6 });
}

/** An uncompressed tar of the entries, in order (e.g. to gzip something truncated). */
export async function tarOf(entries: TarEntries): Promise<Buffer> {
  const pack = tar.pack();
  const chunks: Buffer[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      chunks.push(chunk);
      done();
    },
  });
  const done = pipeline(pack, sink);
  const list = Array.isArray(entries) ? entries : Object.entries(entries);
  for (const [name, entry] of list as Array<readonly [string, TarEntry]>) {
    const { header, body } = toHeader(name, entry);
    await new Promise<void>((resolve, reject) => {
      const callback = (err?: Error | null) => (err ? reject(err) : resolve());
      if (body === undefined) pack.entry(header, callback);
      else pack.entry(header, body, callback);
    });
  }
  pack.finalize();
  await done;
  return Buffer.concat(chunks);
}

/** A gzipped tar of a directory's contents (paths relative to it), sorted, links kept as links. */
export async function tarGzDir(dir: string): Promise<Buffer> {
  const entries: Array<[string, TarEntry]> = [];
  async function walk(rel: string): Promise<void> {
    const names = (await readdir(join(dir, rel))).sort();
    for (const name of names) {
      const path = rel === '' ? name : `${rel}/${name}`;
      const full = join(dir, path);
      const stat = await lstat(full);
      if (stat.isSymbolicLink()) {
        entries.push([path, { type: 'symlink', target: await readlink(full) }]);
      } else if (stat.isDirectory()) {
        entries.push([path, { type: 'dir' }]);
        await walk(path);
      } else if (stat.isFile()) {
        const mode = stat.mode & 0o111 ? 0o755 : 0o644;
        entries.push([path, { type: 'file', content: await readFile(full), mode }]);
      }
    }
  }
  await walk('');
  return tarGz(entries);
}

const MTIME = new Date('2024-01-01T00:00:00Z');

function toHeader(name: string, entry: TarEntry): { header: Header; body?: Buffer } {
  const base = { name, mtime: MTIME, uid: 0, gid: 0, uname: 'root', gname: 'root' };
  if (typeof entry === 'string' || Buffer.isBuffer(entry)) {
    const body = Buffer.from(entry);
    return { header: { ...base, type: 'file', mode: 0o644, size: body.length }, body };
  }
  switch (entry.type) {
    case 'file': {
      const body = Buffer.from(entry.content ?? '');
      const mode = entry.mode ?? 0o644;
      return { header: { ...base, type: 'file', mode, size: body.length }, body };
    }
    case 'dir':
      return { header: { ...base, type: 'directory', mode: entry.mode ?? 0o755 } };
    case 'symlink':
      return { header: { ...base, type: 'symlink', linkname: entry.target, mode: 0o777 } };
    case 'hardlink':
      return { header: { ...base, type: 'link', linkname: entry.target, mode: 0o644 } };
    default:
      return {
        header: { ...base, type: entry.type, mode: 0o644, devmajor: 1, devminor: 3 },
      };
  }
}
