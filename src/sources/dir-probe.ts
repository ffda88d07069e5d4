import { randomBytes } from 'node:crypto';
import { closeSync, openSync, unlinkSync, writeSync } from 'node:fs';
import { join } from 'node:path';

/** A few pages: enough that a full disk refuses it, as it would refuse a real upload. */
const PROBE_BYTES = 16 * 1024;

/**
 * Proves `dir` takes a write now: a small file written and removed, so a full or read-only disk
 * refuses it. Not fsynced: it runs on the event loop (a `/readyz` whose last proof is over a second
 * old), where one fsync stalled every request in flight for about 3 ms on this host; a real
 * upload's own fsync failing marks the store down all the same. Named like the source store's
 * temp files (`.name.tmp`), so one left by a crash is swept at the next start.
 */
export function probeDirectory(dir: string): void {
  const path = join(dir, `.probe-${randomBytes(6).toString('hex')}.tmp`);
  const fd = openSync(path, 'wx', 0o600);
  try {
    writeSync(fd, Buffer.alloc(PROBE_BYTES));
  } finally {
    closeSync(fd);
    unlinkSync(path);
  }
}
