import { chmodSync, closeSync, mkdirSync, openSync, statSync } from 'node:fs';
import type { Log } from '../logging.js';

/**
 * Makes `dir` exist and reachable by this user only (0700), repairing a looser one: the data dir
 * holds every app's env, share-link tokens and key hashes, and no other account may read them.
 */
export function ensurePrivateDir(dir: string, log?: Log): void {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  tighten(dir, 0o700, log);
}

/** Creates `path` empty (0600) when it is missing, else tightens it like `ensurePrivateFile`. */
export function createPrivateFile(path: string, log?: Log): void {
  closeSync(openSync(path, 'a', 0o600));
  tighten(path, 0o600, log);
}

/** Tightens an existing file to 0600 (this user reads and writes it, nobody else); absent is fine. */
export function ensurePrivateFile(path: string, log?: Log): void {
  tighten(path, 0o600, log);
}

function tighten(path: string, mode: number, log?: Log): void {
  let was: number;
  try {
    was = statSync(path).mode & 0o777;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw err;
  }
  if ((was & ~mode) === 0) return;
  try {
    chmodSync(path, mode);
  } catch (err) {
    // Only the owner may chmod: a volume's root (an emptyDir, a PVC) mounted for a non-root pod is
    // root's. What Slipway writes in it is its own and private (0600 files, 0700 dirs).
    if ((err as NodeJS.ErrnoException).code !== 'EPERM') throw err;
    log?.(
      'warn',
      'cannot tighten permissions: another account owns this; its contents stay private',
      {
        path,
        mode: octal(was),
      },
    );
    return;
  }
  log?.('warn', 'repaired permissions: other accounts could read this', {
    path,
    was: octal(was),
    now: octal(mode),
  });
}

const octal = (mode: number): string => `0${mode.toString(8).padStart(3, '0')}`;
