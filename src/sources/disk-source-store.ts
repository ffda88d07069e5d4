import { randomBytes } from 'node:crypto';
import {
  accessSync,
  closeSync,
  constants,
  fstatSync,
  mkdirSync,
  openSync,
  readdirSync,
  readSync,
  rmSync,
  statSync,
  unlinkSync,
} from 'node:fs';
import { open, readdir, rename, stat, unlink, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import { AppError } from '../errors.js';
import { probeDirectory } from './dir-probe.js';
import { syncDir, WRITE_INLINE_MAX, writeSmallDurably } from './durable-write.js';
import { isSourceKey } from './keys.js';
import type { SourceStore, StoredBlob } from './source-store.js';

/**
 * The `served` backend: one file `<dir>/<key>.tar.gz` per blob. Keys are checked with isSourceKey
 * before any path is built, so no key can name a file outside `dir`. Writes go to a dot-named temp
 * file, renamed once whole; a put resolves once the blob and its directory entry are fsynced
 * (durable-write.ts says what a crash before that leaves).
 */
export function createDiskSourceStore(dir: string): SourceStore {
  mkdirSync(dir, { recursive: true });
  sweepTempFiles(dir);
  const pathOf = (key: string): string => join(dir, `${key}${BLOB_SUFFIX}`);

  return {
    backend: 'served',

    async put(key, data) {
      requireKey(key);
      const temp = join(dir, `.${key}.${randomBytes(6).toString('hex')}${TEMP_SUFFIX}`);
      if (data.length <= WRITE_INLINE_MAX) {
        await writeSmallDurably(temp, pathOf(key), dir, data).catch(async (err: unknown) => {
          await unlink(temp).catch(ignoreMissing);
          throw err;
        });
        return;
      }
      try {
        const handle = await open(temp, 'wx', 0o600);
        try {
          await handle.writeFile(data);
          await handle.sync();
        } finally {
          await handle.close();
        }
        await rename(temp, pathOf(key));
      } catch (err) {
        await unlink(temp).catch(ignoreMissing);
        throw err;
      }
      await syncDir(dir);
    },

    async open(key) {
      if (!isSourceKey(key)) return undefined;
      // Opening the descriptor first means a concurrent remove cannot turn into a stream error.
      const handle = await openOrUndefined(pathOf(key));
      return handle?.createReadStream();
    },

    async size(key) {
      if (!isSourceKey(key)) return undefined;
      try {
        // A stat of a local file takes microseconds: done at once, it spares a rollback the
        // thread pool's round trip.
        return statSync(pathOf(key)).size;
      } catch (err) {
        if (isMissing(err)) return undefined;
        throw err;
      }
    },

    async readWhole(key, max) {
      if (!isSourceKey(key)) return undefined;
      // Synchronous: a few small reads of a file just written (or about to be served) cost less
      // than the thread pool's round trip for each of an open, a read and a close.
      let fd: number;
      try {
        fd = openSync(pathOf(key), 'r');
      } catch (err) {
        if (isMissing(err)) return undefined;
        throw err;
      }
      try {
        const size = fstatSync(fd).size;
        if (size > max) return undefined;
        const data = Buffer.alloc(size);
        let at = 0;
        while (at < size) {
          const n = readSync(fd, data, at, size - at, at);
          if (n === 0) return undefined; // shrunk meanwhile: not what was stored
          at += n;
        }
        return data;
      } finally {
        closeSync(fd);
      }
    },

    async remove(key) {
      requireKey(key);
      // At once, as `size`: a rollback that prunes a version removes its blob before it goes on.
      rmSync(pathOf(key), { force: true });
    },

    ping() {
      try {
        accessSync(dir, constants.R_OK | constants.W_OK);
        return true;
      } catch {
        // A ping answers "usable or not"; the reason surfaces when a put or open fails.
        return false;
      }
    },

    probe: () => probeDirectory(dir),

    async list() {
      const blobs: StoredBlob[] = [];
      for (const name of await readdir(dir)) {
        // Temp files (dot-named) and anything an operator dropped here are not blobs.
        if (!name.endsWith(BLOB_SUFFIX)) continue;
        const key = name.slice(0, -BLOB_SUFFIX.length);
        if (!isSourceKey(key)) continue;
        try {
          const info = await stat(pathOf(key));
          if (info.isFile()) blobs.push({ key, modifiedAt: info.mtimeMs, bytes: info.size });
        } catch (err) {
          // Removed between the listing and the stat: no longer a blob to report.
          ignoreMissing(err);
        }
      }
      return blobs;
    },
  };
}

const BLOB_SUFFIX = '.tar.gz';

const TEMP_SUFFIX = '.tmp';

function requireKey(key: string): void {
  if (!isSourceKey(key)) {
    throw new AppError(400, 'bad_request', `invalid source key ${JSON.stringify(key)}`);
  }
}

async function openOrUndefined(path: string): Promise<FileHandle | undefined> {
  try {
    return await open(path, 'r');
  } catch (err) {
    if (isMissing(err)) return undefined;
    throw err;
  }
}

/** Temp files left by a crash mid-put are garbage: no key ever points at them. */
function sweepTempFiles(dir: string): void {
  for (const name of readdirSync(dir)) {
    if (name.startsWith('.') && name.endsWith(TEMP_SUFFIX)) {
      try {
        unlinkSync(join(dir, name));
      } catch (err) {
        if (!isMissing(err)) throw err;
      }
    }
  }
}

function isMissing(err: unknown): boolean {
  return (err as NodeJS.ErrnoException | undefined)?.code === 'ENOENT';
}

function ignoreMissing(err: unknown): void {
  if (!isMissing(err)) throw err;
}
