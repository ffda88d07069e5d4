import { closeSync, linkSync, mkdirSync, openSync, rmSync, symlinkSync, writeSync } from 'node:fs';
import net from 'node:net';
import { join } from 'node:path';
import { PassThrough, Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGunzip, gunzipSync } from 'node:zlib';
import tar from 'tar-stream';
import { ByteCap } from '../sources/byte-cap.js';
import { parentOf } from '../sources/paths.js';
import { extractBuffer } from '../sources/tar-buffer.js';
import { SourceTree } from '../sources/tree.js';
import { APP_DIR, SOCKET_DIR, SOURCES_SOCK } from './protocol.js';
import { placement } from './placement.js';
import { getUrl } from './url-pull.js';

/** design.md §6: the same caps the control plane applied on upload, kept here as a safety net. */
const MAX_COMPRESSED = 50 * 1024 * 1024;
const MAX_UNPACKED = 512 * 1024 * 1024;
const MAX_ENTRIES = 10_000;
/** Compressed sizes inflated in one synchronous call, to at most 64 times their size. */
const IN_MEMORY_MAX = 1024 * 1024;

/** A source that must not be extracted: a configuration problem, not a sandbox failure. */
export class BadSourceError extends Error {
  override name = 'BadSourceError';
}

/** Caps for a built tree (node_modules and all): bounded by the sandbox's own tmpfs anyway. */
export const ARTIFACT_LIMITS = {
  compressed: 512 * 1024 * 1024,
  unpacked: 1024 * 1024 * 1024,
  entries: 200_000,
};

/**
 * Pulls `/internal/sources/<key>.tar.gz` through the host's door and extracts it into /app in one
 * streaming pass: no temp file, and the tarball is checked entry by entry with the same rules the
 * upload was (absolute paths, `..`, links leaving the tree, devices and fifos are refused).
 * `artifact`: pull `/internal/artifacts/<key>.tar.gz` instead, a built tree, streamed under
 * ARTIFACT_LIMITS. `url`: pull from there (a pre-signed object-store URL) instead of the door.
 */
export async function pullAndUnpack(
  key: string,
  token: string,
  dest = APP_DIR,
  artifact = false,
  url?: string,
): Promise<void> {
  const kind = artifact ? 'artifacts' : 'sources';
  const response = url
    ? await getUrl(url, placement.sourceProxy)
    : await get(`/internal/${kind}/${encodeURIComponent(key)}.tar.gz`, token);
  if (response.statusCode !== 200) {
    response.body.resume();
    throw new Error(`source door answered ${response.statusCode} for ${key}`);
  }
  await unpack(response.body, dest, artifact);
}

/**
 * Extracts the gzipped tarball `body` into `dest` in one streaming pass, checked as pullAndUnpack
 * says: a source that came with the inject request itself goes through here too.
 */
export async function unpack(body: Readable, dest = APP_DIR, artifact = false): Promise<void> {
  mkdirSync(dest, { recursive: true, mode: 0o755 });
  const tree = new SourceTree(artifact ? ARTIFACT_LIMITS.entries : MAX_ENTRIES);
  const links: { path: string; target: string }[] = [];
  const made = new Set<string>(['']);
  const mkdirs = (dir: string) => {
    if (made.has(dir)) return;
    mkdirSync(join(dest, dir), { recursive: true, mode: 0o755 });
    made.add(dir);
  };
  const extract = tar.extract();
  extract.on('entry', (header, stream, next) => {
    let entry: { path: string; kind: string };
    try {
      entry = tree.add(header);
    } catch (err) {
      next(new BadSourceError(err instanceof Error ? err.message : String(err)));
      return;
    }
    const full = join(dest, entry.path);
    try {
      if (entry.kind === 'dir') mkdirs(entry.path);
      else mkdirs(parentOf(entry.path));
      if (entry.kind === 'file') return writeEntry(full, header.mode, stream, next);
      if (entry.kind === 'hardlink') {
        // Checked by the tree: the target is an earlier regular file of this archive.
        rmSync(full, { force: true });
        linkSync(join(dest, header.linkname ?? ''), full);
      }
      // Symlinks last, after the whole tree is checked: nothing is ever written through one.
      if (entry.kind === 'symlink') links.push({ path: full, target: header.linkname ?? '' });
    } catch (err) {
      stream.resume();
      next(err instanceof Error ? err : new Error(String(err)));
      return;
    }
    stream.on('end', () => next());
    stream.resume();
  });

  const tarball = artifact ? Promise.resolve(streamed(body)) : tarBytes(body);
  await tarball
    .then((tar) => (tar instanceof Buffer ? extractBuffer(extract, tar) : pipeline(tar, extract)))
    .catch((err: unknown) => {
      if (err instanceof BadSourceError) throw err;
      const code = (err as { code?: unknown }).code;
      if (typeof code === 'string' && (code.startsWith('Z_') || code === 'ERR_BUFFER_TOO_LARGE')) {
        throw new BadSourceError(`source is not a gzip stream within the limits (${String(err)})`);
      }
      throw err;
    });
  try {
    tree.finish();
  } catch (err) {
    throw new BadSourceError(err instanceof Error ? err.message : String(err));
  }
  for (const link of links) {
    rmSync(link.path, { force: true, recursive: true });
    symlinkSync(link.target, link.path);
  }
}

/** Writes as the bytes arrive: synchronous calls on tmpfs beat a stream per file by far. */
/** What writeEntry needs of a tar entry's stream. */
interface EntryStream {
  on(event: 'data', listener: (chunk: unknown) => void): unknown;
  on(event: 'end', listener: () => void): unknown;
}

function writeEntry(
  path: string,
  mode: number | undefined,
  stream: EntryStream,
  next: (err?: Error) => void,
): void {
  // Owner read/write always, the exec bits as archived; never setuid or world-writable.
  const fd = openSync(path, 'w', ((mode ?? 0o644) & 0o755) | 0o600);
  let failed: Error | undefined;
  stream.on('data', (chunk: unknown) => {
    if (failed !== undefined) return;
    try {
      writeSync(fd, chunk as Uint8Array);
    } catch (err) {
      failed = err instanceof Error ? err : new Error(String(err));
    }
  });
  stream.on('end', () => {
    closeSync(fd);
    next(failed);
  });
}

/**
 * The uncompressed tar. A typical source is small: gunzipping it in one synchronous call beats a
 * zlib stream (a thread-pool hop per chunk) by a millisecond or more, and it goes to the extract
 * whole. A large one is inflated as a stream, so memory stays flat whatever it unpacks to.
 */
async function tarBytes(body: Readable): Promise<Buffer | Readable> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    size += (chunk as Buffer).length;
    if (size > MAX_COMPRESSED)
      throw new BadSourceError(`compressed source is over ${MAX_COMPRESSED} bytes`);
    chunks.push(chunk as Buffer);
  }
  const compressed = Buffer.concat(chunks);
  if (compressed.length <= IN_MEMORY_MAX) {
    return gunzipSync(compressed, { maxOutputLength: IN_MEMORY_MAX * 64 });
  }
  return Readable.from([compressed])
    .pipe(createGunzip({ chunkSize: 256 * 1024 }))
    .pipe(capped(MAX_UNPACKED, 'unpacked source'));
}

/** A large built tree is never held in memory: inflated as it streams, capped both sides. */
function streamed(body: Readable): Readable {
  const out = new PassThrough();
  // pipe() would drop a failure midway (a corrupt gzip): the extract must hear of it.
  pipeline(
    body,
    capped(ARTIFACT_LIMITS.compressed, 'compressed artifact'),
    createGunzip({ chunkSize: 256 * 1024 }),
    capped(ARTIFACT_LIMITS.unpacked, 'unpacked artifact'),
    out,
  ).catch((err: unknown) => out.destroy(err instanceof Error ? err : new Error(String(err))));
  return out;
}

/**
 * A bare HTTP/1.0 GET on the door's socket: the response is the status line, headers, then the
 * body until the door closes. node:http's client costs several ms of lazy compilation in a fresh
 * process; this costs one connect.
 */
function get(path: string, token: string): Promise<{ statusCode: number; body: Readable }> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(`${SOCKET_DIR}/${SOURCES_SOCK}`);
    let head = Buffer.alloc(0);
    const onData = (chunk: Buffer) => {
      head = Buffer.concat([head, chunk]);
      const end = head.indexOf('\r\n\r\n');
      if (end === -1) {
        if (head.length > 16_384) socket.destroy(new Error('source door sent an oversized head'));
        return;
      }
      socket.off('data', onData);
      socket.off('error', reject);
      socket.pause();
      const statusCode = Number(
        /^HTTP\/1\.[01] (\d{3})/.exec(head.subarray(0, end).toString('latin1'))?.[1] ?? 0,
      );
      const body = new PassThrough();
      socket.on('error', (err) => body.destroy(err));
      body.write(head.subarray(end + 4));
      socket.pipe(body);
      resolve({ statusCode, body });
    };
    socket.on('data', onData);
    socket.on('error', reject);
    socket.on('end', () => reject(new Error('source door closed before answering')));
    socket.write(`GET ${path} HTTP/1.0\r\nAuthorization: Bearer ${token}\r\n\r\n`);
  });
}

/** The source or artifact is refused (400), not the agent broken, when a stream passes its cap. */
function capped(max: number, what: string): ByteCap {
  return new ByteCap(max, () => new BadSourceError(`${what} is over ${max} bytes`));
}
