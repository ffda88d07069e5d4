import { execFileSync } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** Mounts a tmpfs of `size` (e.g. `32m`) at `dir` (created); returns the unmount. Needs root. */
export function mountTmpfs(dir: string, size: string): () => void {
  mkdirSync(dir, { recursive: true });
  execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${size}`, 'tmpfs', dir]);
  return () => execFileSync('umount', ['-l', dir]);
}

/**
 * Fills the file system holding `dir` with ballast files until it refuses a byte more; `free()`
 * removes them. What a disk filled by something else looks like to the server using it.
 */
export function fillDisk(dir: string): { free: () => void } {
  const files: string[] = [];
  for (const size of [1024 * 1024, 64 * 1024, 4096, 512, 1]) {
    for (;;) {
      const file = join(dir, `.ballast-${files.length}`);
      try {
        writeFileSync(file, Buffer.alloc(size));
        files.push(file);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'ENOSPC') throw err;
        rmSync(file, { force: true });
        break;
      }
    }
  }
  return { free: () => files.forEach((file) => rmSync(file, { force: true })) };
}
