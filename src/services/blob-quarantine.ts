import { randomBytes } from 'node:crypto';
import { createWriteStream, mkdirSync } from 'node:fs';
import { open, readdir, rename, stat, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { isSourceKey } from '../sources/keys.js';

/** Quarantined blobs are kept a week unless `sources.quarantineRetention` says otherwise. */
export const QUARANTINE_RETENTION_MS = 7 * 24 * 3_600_000;

/**
 * Where the orphan sweep puts the blobs it takes: `<dataDir>/quarantine/<key>.tar.gz`, kept for
 * `retentionMs` after they were swept (the file's mtime), then deleted. A sweep that was wrong (a
 * database restored from a backup older than the blobs) is undone by moving the file back into
 * the source store (`<dataDir>/sources/` for `served`).
 */
export class BlobQuarantine {
  constructor(
    readonly dir: string,
    private readonly retentionMs = QUARANTINE_RETENTION_MS,
    private readonly now: () => number = Date.now,
  ) {}

  /** Writes `data` as the quarantined copy of `key`, durably, before the original is removed. */
  async keep(key: string, data: Readable): Promise<void> {
    if (!isSourceKey(key)) throw new Error(`not a source key: ${JSON.stringify(key)}`);
    mkdirSync(this.dir, { recursive: true, mode: 0o700 });
    const temp = join(this.dir, `.${key}.${randomBytes(6).toString('hex')}.tmp`);
    try {
      await pipeline(data, createWriteStream(temp, { flags: 'wx', mode: 0o600 }));
      const handle = await open(temp, 'r+');
      try {
        await handle.sync();
      } finally {
        await handle.close();
      }
      await rename(temp, this.pathOf(key));
    } catch (err) {
      await unlink(temp).catch(ignoreMissing);
      throw err;
    }
  }

  pathOf(key: string): string {
    return join(this.dir, `${key}.tar.gz`);
  }

  /** Deletes what was quarantined longer ago than the retention; returns the keys deleted. */
  async expire(): Promise<string[]> {
    const cutoff = this.now() - this.retentionMs;
    const names = await readdir(this.dir).catch((err: unknown) => {
      ignoreMissing(err);
      return [];
    });
    const expired: string[] = [];
    for (const name of names) {
      const key = name.endsWith('.tar.gz') ? name.slice(0, -'.tar.gz'.length) : '';
      if (!isSourceKey(key)) continue;
      const path = join(this.dir, name);
      try {
        if ((await stat(path)).mtimeMs > cutoff) continue;
        await unlink(path);
        expired.push(key);
      } catch (err) {
        ignoreMissing(err);
      }
    }
    return expired;
  }
}

function ignoreMissing(err: unknown): void {
  if ((err as NodeJS.ErrnoException | undefined)?.code !== 'ENOENT') throw err;
}
