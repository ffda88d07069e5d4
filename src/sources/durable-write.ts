import { closeSync, fsync, openSync, renameSync, rmSync, writeSync } from 'node:fs';
import { promisify } from 'node:util';

const fsyncOnPool = promisify(fsync);

/** Blobs up to this size are written by writeSmallDurably; larger ones stream. */
export const WRITE_INLINE_MAX = 1024 * 1024;

/**
 * Writes `data` to `temp`, renames it to `final`, then fsyncs the file and `dir` at once: the put
 * resolves only when both the data and the directory entry are on the disk. The open, write,
 * close and rename run on this thread (a few µs for a small blob); only the two fsyncs go to the
 * thread pool, side by side (one after the other cost a deploy a third of a millisecond more).
 * A crash before it resolves may leave a partial file under `final`, but nothing points at a
 * blob before its put resolved (a release's rows are written after it), and the orphan sweep
 * (services/orphan-blobs.ts) moves it away. A failed fsync removes `final` again.
 */
export async function writeSmallDurably(
  temp: string,
  final: string,
  dir: string,
  data: Buffer,
): Promise<void> {
  const fd = openSync(temp, 'wx', 0o600);
  try {
    for (let at = 0; at < data.length;) at += writeSync(fd, data, at, data.length - at);
    renameSync(temp, final);
    await Promise.all([fsyncOnPool(fd), syncDir(dir)]).catch((err: unknown) => {
      rmSync(final, { force: true });
      throw err;
    });
  } finally {
    closeSync(fd);
  }
}

/** Makes a rename in `dir` durable: the directory entry itself reaches the disk. */
export async function syncDir(dir: string): Promise<void> {
  const fd = openSync(dir, 'r');
  try {
    await fsyncOnPool(fd);
  } finally {
    closeSync(fd);
  }
}
