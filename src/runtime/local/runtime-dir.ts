import { createHash } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, realpathSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { RuntimeError } from '../runtime.js';

/**
 * Where an instance keeps what its sandboxes bind (the agent bundle, /etc files, one socket dir
 * per sandbox): a directory Slipway itself creates `0711`, never under the data dir, whose parents
 * the unprivileged sandbox users may traverse (a data dir under `/root` is not reachable by them).
 * One per data dir, so parallel instances never share sockets or sweep each other's leftovers.
 */
export function runtimeRoot(dataDir: string, configured: string | undefined): string {
  const id = instanceId(dataDir);
  if (configured) return join(resolve(configured), id);
  if (isRoot() && existsSync('/run')) return join('/run/slipway', id);
  return join(tmpdir(), `slipway-${process.getuid?.() ?? 'user'}`, id);
}

/** A short stable id of the data dir: names this instance's runtime dir and cgroups. */
export function instanceId(dataDir: string): string {
  mkdirSync(dataDir, { recursive: true });
  return createHash('sha256').update(realpathSync(dataDir)).digest('hex').slice(0, 12);
}

/** Creates the dir (and missing parents) `0711`, owned by us; refuses a symlinked or foreign one. */
export function makePrivateDir(dir: string): void {
  mkdirSync(dir, { recursive: true, mode: 0o711 });
  const stat = statSync(dir, { throwIfNoEntry: true });
  if (realpathSync(dir) !== resolve(dir)) {
    throw new RuntimeError(`runtime.dir: ${dir} goes through a symlink; name the real path`, false);
  }
  if (stat.uid !== (process.getuid?.() ?? stat.uid)) {
    throw new RuntimeError(`runtime.dir: ${dir} belongs to uid ${stat.uid}, not to us`, false);
  }
  chmodSync(dir, 0o711);
}

/**
 * Sandboxes run as other uids than ours when we are root: every directory above what bwrap binds
 * must let them pass. Names the first one that does not, with the fix, in one line.
 */
export function checkReachable(path: string, what: string): void {
  if (!isRoot()) return;
  for (let dir = dirname(realpathSync(path)); ; dir = dirname(dir)) {
    if ((statSync(dir).mode & 0o001) === 0) {
      throw new RuntimeError(
        `${what} ${path} is not reachable by the sandbox users: ${dir} is not searchable by others ` +
          `(chmod o+x it, or set runtime.dir / SVC_RUNTIME_DIR to a path under a world-searchable ` +
          `directory such as /run/slipway)`,
        false,
      );
    }
    if (dir === '/') return;
  }
}

export function isRoot(): boolean {
  return process.getuid?.() === 0;
}
