import { Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { gzipSync } from 'node:zlib';
import tar from 'tar-stream';
import { AppError, badRequest } from '../errors.js';
import { ancestorsOf, quote, segments } from '../sources/paths.js';
import { sourceTooLarge } from '../sources/tarball.js';

/** One file of a `files` map: plain text, or content with its encoding. */
export type FileContent = string | { content: string; encoding?: 'utf8' | 'base64' };

/**
 * Fixed header fields: the same files always pack to the same bytes, so the same source hashes the
 * same (`source_hash` in the history) whichever agent sent it and when.
 */
const MTIME = new Date('2000-01-01T00:00:00Z');
const HEADER = { mtime: MTIME, uid: 0, gid: 0, uname: 'root', gname: 'root', mode: 0o644 };
/** gzip at a fixed level: zlib's output for a given input and level does not vary between runs. */
const GZIP_LEVEL = 6;
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/**
 * Packs a `files` map (path → content) into a gzipped tarball: paths normalised and sorted, fixed
 * mtime, mode and owner. Refuses what a tarball upload would refuse, naming the file, so an agent
 * learns which key to fix: absolute paths, `..`, NUL bytes, a path given twice, a file that is
 * also another file's directory. Over `maxBytes` compressed → 413, as for an upload.
 */
export async function packFiles(
  files: Readonly<Record<string, FileContent>>,
  maxBytes: number,
): Promise<Buffer> {
  const entries = new Map<string, Buffer>();
  for (const [rawPath, value] of Object.entries(files)) {
    const path = filePath(rawPath);
    if (entries.has(path)) {
      throw badRequest(`${fileArg(rawPath)} names the same file as another key`, {
        field: fileArg(rawPath),
      });
    }
    entries.set(path, decode(rawPath, value));
  }
  if (entries.size === 0) {
    throw new AppError(400, 'missing_source', 'files must hold at least one file');
  }
  for (const path of entries.keys()) {
    const clash = ancestorsOf(path).find((dir) => entries.has(dir));
    if (clash !== undefined) {
      throw badRequest(`${fileArg(clash)} is a file, so ${quote(path)} cannot be inside it`, {
        field: fileArg(clash),
      });
    }
  }
  const sorted = [...entries.keys()].sort();
  const packed = gzipSync(await tarOf(sorted.map((p) => [p, entries.get(p) as Buffer])), {
    level: GZIP_LEVEL,
  });
  if (packed.length > maxBytes) throw sourceTooLarge(maxBytes, packed.length);
  return packed;
}

/** Decodes `tarball_base64`; the same size cap as an upload applies to the decoded bytes. */
export function decodeTarball(base64: string, maxBytes: number): Buffer {
  const compact = base64.replace(/\s+/g, '');
  if (compact.length === 0) {
    throw new AppError(400, 'missing_source', 'tarball_base64 is empty');
  }
  if (compact.length % 4 !== 0 || !BASE64.test(compact)) {
    throw badRequest('tarball_base64 is not valid base64', { field: 'tarball_base64' });
  }
  // Checked before decoding, from the length alone: an oversized upload costs no allocation.
  const decodedLength = (compact.length / 4) * 3 - (compact.match(/=+$/)?.[0].length ?? 0);
  if (decodedLength > maxBytes) throw sourceTooLarge(maxBytes, decodedLength);
  return Buffer.from(compact, 'base64');
}

/** A key of the `files` argument as the agent would write it: `files["src/app.js"]`. */
export const fileArg = (key: string): string => `files[${quote(key)}]`;

/**
 * The one folder every file is under (`myapp` for `myapp/package.json` and `myapp/server.js`), if
 * there is one: the usual reason a files map has no entrypoint at its root.
 */
export function topFolderOf(files: Readonly<Record<string, FileContent>>): string | undefined {
  let folder: string | undefined;
  for (const parts of Object.keys(files).map(segments)) {
    if (parts.length < 2 || (folder !== undefined && parts[0] !== folder)) return undefined;
    folder = parts[0];
  }
  return folder;
}

/** The tar path of a `files` key; the rules of src/sources/paths.ts, worded for a map key. */
function filePath(raw: string): string {
  const arg = fileArg(raw);
  const field = { field: arg };
  if (raw.includes('\0')) throw badRequest(`${arg} has a NUL byte in its path`, field);
  if (raw.startsWith('/')) {
    throw badRequest(`${arg} is absolute; paths must be relative`, field);
  }
  const parts = segments(raw);
  if (parts.includes('..')) {
    throw badRequest(`${arg} has a '..' segment; paths must stay inside`, field);
  }
  if (parts.length === 0) throw badRequest(`${arg} names no file`, field);
  return parts.join('/');
}

function decode(path: string, value: FileContent): Buffer {
  if (typeof value === 'string') return Buffer.from(value, 'utf8');
  if (value.encoding !== 'base64') return Buffer.from(value.content, 'utf8');
  const compact = value.content.replace(/\s+/g, '');
  if (compact.length % 4 !== 0 || !BASE64.test(compact)) {
    throw badRequest(`${fileArg(path)} has encoding base64 but its content is not base64`, {
      field: fileArg(path),
    });
  }
  return Buffer.from(compact, 'base64');
}

async function tarOf(entries: ReadonlyArray<readonly [string, Buffer]>): Promise<Buffer> {
  const pack = tar.pack();
  const chunks: Buffer[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      chunks.push(chunk);
      done();
    },
  });
  const done = pipeline(pack, sink);
  try {
    for (const [name, body] of entries) {
      await new Promise<void>((resolve, reject) => {
        pack.entry({ ...HEADER, name, type: 'file', size: body.length }, body, (err) =>
          err ? reject(err) : resolve(),
        );
      });
    }
  } catch (err) {
    // The pipeline rejects too once the pack is destroyed; settle it so that is not unhandled.
    pack.destroy(err as Error);
    await Promise.allSettled([done]);
    throw err;
  }
  pack.finalize();
  await done;
  return Buffer.concat(chunks);
}
