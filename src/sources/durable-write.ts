import { closeSync, fsync, openSync, renameSync, writeSync } from 'node:fs';
import { promisify } from 'node:util';

const fsyncOnPool = promisify(fsync);

/** Blobs up to this size are written by writeSmallDurably; larger ones stream. */
export const WRITE_INLINE_MAX = 1024 * 1024;

/**
 * Writes `data` to `temp`, fsyncs it, renames it to `final` and fsyncs `dir`, so a crash leaves
 * the whole file or none of it. The open, write, close and rename run on this thread (a few µs
 * for a small blob); only the two fsyncs go to the thread pool, where each step of an
 * asynchronous write is a round trip of its own (the eight of a blob cost a deploy about 1 ms).
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
    await fsyncOnPool(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(temp, final);
  await syncDir(dir);
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
