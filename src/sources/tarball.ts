import { createHash } from 'node:crypto';
import { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGunzip, type Gunzip } from 'node:zlib';
import tar, { type ExtractEvents } from 'tar-stream';
import { AppError, badRequest } from '../errors.js';
import { ByteCap } from './byte-cap.js';
import { readPackageJson } from './package-json.js';
import { extractBuffer, inflateSmall } from './tar-buffer.js';
import { SourceTree } from './tree.js';

/** What one pass over a source tarball learned about it. */
export interface SourceInfo {
  /** `sha256:<hex>` of the compressed bytes, exactly as uploaded. */
  hash: string;
  /** Normalised relative paths (`a/b.js`) of regular files, hardlinks included, sorted. */
  files: string[];
  /** The root `package.json` when it is a regular file holding a JSON object. */
  packageJson?: Record<string, unknown>;
  /** The root `requirements.txt` as text, when it is a regular file. */
  requirementsTxt?: string;
  /** Sum of the regular files' sizes: what extraction writes to disk. */
  totalBytes: number;
  /** Tar entries of every kind (directories and links too; pax headers not). */
  entryCount: number;
}

export interface TarballLimits {
  /** Cap on the gunzipped tar stream (design.md §6: 512 MB); over it → 413. */
  maxUnpackedBytes?: number;
  /** design.md §6: 10,000. */
  maxEntries?: number;
  /** Compressed size cap; unset = not checked here (the multipart limit already applies). */
  maxCompressedBytes?: number;
}

/** Sources that unpack to at most this are inflated in memory (tar-buffer.ts), larger ones stream. */
const SMALL_UNPACKED = 1024 * 1024;

export const DEFAULT_TARBALL_LIMITS = {
  maxUnpackedBytes: 512 * 1024 * 1024,
  maxEntries: 10_000,
} as const;

/**
 * Reads a gzipped tarball in one pass and refuses anything the agent must not extract: see tree.ts
 * for the entry rules. Every refusal is an AppError (400 `bad_request`, or 413 `payload_too_large`
 * for size). One that unpacks to a megabyte at most is inflated in memory; a larger one streams,
 * and a gzip bomb is stopped by a running count of inflated bytes, so memory stays flat whatever
 * the ratio.
 */
export async function inspectTarball(
  data: Buffer,
  limits: TarballLimits = {},
): Promise<SourceInfo> {
  const maxUnpacked = limits.maxUnpackedBytes ?? DEFAULT_TARBALL_LIMITS.maxUnpackedBytes;
  const maxEntries = limits.maxEntries ?? DEFAULT_TARBALL_LIMITS.maxEntries;
  if (limits.maxCompressedBytes !== undefined && data.length > limits.maxCompressedBytes) {
    throw sourceTooLarge(limits.maxCompressedBytes, data.length);
  }
  if (data.length < 2 || data[0] !== 0x1f || data[1] !== 0x8b) {
    throw badRequest('source must be a gzipped tarball (application/gzip)');
  }
  const small = inflateSmall(data, Math.min(maxUnpacked, SMALL_UNPACKED));
  if (!small && declaredSize(data) > maxUnpacked) await inflateCounting(data, maxUnpacked);

  const tree = new SourceTree(maxEntries);
  const state = {
    totalBytes: 0,
    packageJson: undefined as Buffer | undefined,
    requirements: undefined as Buffer | undefined,
  };
  const extract = tar.extract();
  extract.on('entry', (header, stream, next) => {
    // When the extract fails it destroys the entry stream with the same error, which the pipeline
    // already reports; unheard, that second 'error' would crash the process.
    stream.on('error', noteSecondary);
    try {
      const { path, kind } = tree.add(header);
      if (kind === 'file') {
        state.totalBytes += header.size;
        // Refuse an over-large file from its header alone, before inflating its bytes.
        if (state.totalBytes > maxUnpacked) throw unpacksTooLarge(maxUnpacked);
      }
      if (path === 'package.json') {
        // A later entry replaces an earlier one, as on extraction; only a regular file is read.
        state.packageJson = undefined;
        if (kind === 'file') {
          collect(path, stream, (body) => (state.packageJson = body), next);
          return;
        }
      }
      if (path === 'requirements.txt') {
        state.requirements = undefined;
        if (kind === 'file') {
          collect(path, stream, (body) => (state.requirements = body), next);
          return;
        }
      }
      stream.on('end', () => next());
      stream.resume();
    } catch (err) {
      next(err instanceof Error ? err : new Error(String(err)));
    }
  });

  if (small) await extractBuffer(extract, small).catch(refuse);
  else await inflateInto(data, maxUnpacked, extract);
  const files = tree.finish();
  if (files.length === 0) throw badRequest('source tarball contains no files');
  const info: SourceInfo = {
    hash: `sha256:${createHash('sha256').update(data).digest('hex')}`,
    files,
    totalBytes: state.totalBytes,
    entryCount: tree.entryCount,
  };
  if (state.packageJson) info.packageJson = readPackageJson(state.packageJson);
  if (state.requirements) info.requirementsTxt = state.requirements.toString('utf8');
  return info;
}

function noteSecondary(_err: unknown): void {
  // Deliberately nothing: the pipeline rejects with this error (or an earlier one).
}

/** package.json and requirements.txt are read into memory, so they get a cap of their own. */
const MAX_MANIFEST_BYTES = 1024 * 1024;

type EntryStream = ExtractEvents['entry'][1];
type Next = ExtractEvents['entry'][2];

function collect(
  name: string,
  stream: EntryStream,
  onBody: (body: Buffer) => void,
  next: Next,
): void {
  const chunks: Buffer[] = [];
  let size = 0;
  stream.on('data', (data) => {
    const chunk = data as Buffer;
    size += chunk.length;
    if (size <= MAX_MANIFEST_BYTES) chunks.push(chunk);
  });
  stream.on('end', () => {
    if (size > MAX_MANIFEST_BYTES) {
      next(badRequest(`${name} is larger than ${MAX_MANIFEST_BYTES} bytes`));
      return;
    }
    onBody(Buffer.concat(chunks));
    next();
  });
}

/**
 * The gzip trailer's last field is the inflated size mod 2^32. A value over the cap means an honest
 * bomb (or a truncated or corrupt upload whose last bytes merely look like one), so
 * inflateCounting decides which. A trailer that lies low is caught by ByteCap in the main pass.
 */
function declaredSize(data: Buffer): number {
  return data.length < 18 ? 0 : data.readUInt32LE(data.length - 4);
}

/**
 * Inflates and discards, counting: about ten times faster than also parsing tar headers, so an
 * honest bomb is refused in a fraction of a second. Throws 413 over the cap, 400 on a bad stream.
 */
function inflateCounting(data: Buffer, max: number): Promise<void> {
  return inflateInto(data, max, new Writable({ write: (_chunk, _encoding, done) => done() }));
}

/** Streams `data` gunzipped into `sink`, capped at `max` bytes; a failure is thrown as a refusal. */
async function inflateInto(data: Buffer, max: number, sink: NodeJS.WritableStream): Promise<void> {
  await pipeline(
    Readable.from([data]),
    gunzip(),
    new ByteCap(max, () => unpacksTooLarge(max)),
    sink,
  ).catch(refuse);
}

function gunzip(): Gunzip {
  // Large output chunks: inflating in the default 16 KB steps makes a bomb take seconds to refuse.
  return createGunzip({ chunkSize: 256 * 1024 });
}

/** A source over `max` bytes; `bytes` is its size when known (an upload is cut off before). */
export function sourceTooLarge(max: number, bytes?: number): AppError {
  const what = bytes === undefined ? 'larger than' : `${bytes} bytes, over`;
  return tooLarge(`source tarball is ${what} the limit of ${size(max)}`, max);
}

function unpacksTooLarge(max: number): AppError {
  return tooLarge(`source tarball unpacks to more than the limit of ${size(max)}`, max);
}

function tooLarge(message: string, max: number): AppError {
  return new AppError(413, 'payload_too_large', message, { limitBytes: max });
}

function size(bytes: number): string {
  const mb = bytes / (1024 * 1024);
  return Number.isInteger(mb) ? `${mb} MB` : `${bytes} bytes`;
}

function refuse(err: unknown): never {
  throw asRefusal(err);
}

/** Maps a stream failure to the refusal it stands for; errors of our own making pass through. */
function asRefusal(err: unknown): unknown {
  if (err instanceof AppError || !(err instanceof Error)) return err;
  const code = (err as NodeJS.ErrnoException).code;
  if (typeof code === 'string' && code.startsWith('Z_')) {
    return badRequest(`source is not a valid gzip stream (${err.message})`);
  }
  // tar-stream reports a malformed archive with plain Errors; a TypeError and the like is a bug.
  if (err.constructor === Error)
    return badRequest(`source is not a valid tar archive (${err.message})`);
  return err;
}
