import { createHash } from 'node:crypto';
import {
  chmodSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  realpathSync,
  renameSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';
import { RuntimeError } from '../runtime.js';
import { startTime } from './process-tree.js';

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
export function makePrivateDir(dir: string, mode = 0o711): void {
  mkdirSync(dir, { recursive: true, mode });
  const stat = statSync(dir, { throwIfNoEntry: true });
  if (realpathSync(dir) !== resolve(dir)) {
    throw new RuntimeError(`runtime.dir: ${dir} goes through a symlink; name the real path`, false);
  }
  if (stat.uid !== (process.getuid?.() ?? stat.uid)) {
    throw new RuntimeError(`runtime.dir: ${dir} belongs to uid ${stat.uid}, not to us`, false);
  }
  chmodSync(dir, mode);
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

const OWNER_FILE = 'owner';
/** A sibling dir with no owner file yet may be another instance starting up right now. */
const UNOWNED_GRACE_MS = 60_000;

/**
 * Writes who owns the dir (pid and its start time, so a reused pid is not taken for us) and whose
 * data dir it serves: a sweeper must hold that data dir's lock to take the dir away.
 */
export function claimRuntimeDir(dir: string, dataDir: string): void {
  const owner = `${process.pid} ${startTime(process.pid)}\n${JSON.stringify(realpathSync(dataDir))}\n`;
  // Renamed into place: a sweeper reading it mid-write would find no owner and take the dir.
  // The temporary name is ours alone: one server per data dir, and this is that server's dir.
  const partial = join(dir, `${OWNER_FILE}.partial`);
  writeFileSync(partial, owner, { mode: 0o600 });
  renameSync(partial, join(dir, OWNER_FILE));
}

/** A sibling runtime dir whose owner is gone, and the data dir it served when it says so. */
export interface DeadSibling {
  id: string;
  dataDir: string | undefined;
}

/**
 * The sibling runtime dirs (other data dirs' instances) whose owner is gone: killed without the
 * chance to clean up. Their ids name their cgroup folders too. A dead owner may be about to be
 * replaced by its data dir's next server: the caller checks that under the data dir's lock.
 */
export function deadSiblings(dir: string): DeadSibling[] {
  return readdirSync(dirname(dir)).flatMap((id) => {
    if (id === basename(dir)) return [];
    const dead = deadSibling(dir, id);
    return dead ? [dead] : [];
  });
}

/** The sibling runtime dir `id` when its owner is gone (see deadSiblings), else undefined. */
export function deadSibling(dir: string, id: string): DeadSibling | undefined {
  if (!/^[0-9a-f]{12}$/.test(id)) return undefined;
  const parent = dirname(dir);
  let owner: string;
  try {
    owner = readFileSync(join(parent, id, OWNER_FILE), 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    return abandoned(join(parent, id), id);
  }
  const [holder = '', served] = owner.split('\n');
  const [pid = '', started = ''] = holder.trim().split(' ');
  // A file no Slipway wrote whole names no owner: its dir is treated as one with none.
  if (!/^[1-9]\d*$/.test(pid) || !/^\d+$/.test(started)) {
    return abandoned(join(parent, id, OWNER_FILE), id);
  }
  if (startTime(Number(pid)) === started) return undefined;
  return { id, dataDir: served ? dataDirOf(served) : undefined };
}

/**
 * A sibling with no owner to ask: dead once `path` (its dir, or its unreadable owner file) has
 * not changed for the grace time; until then it may be an instance starting up. Gone since
 * readdir (its instance stopped and removed it) leaves nothing to sweep.
 */
function abandoned(path: string, id: string): DeadSibling | undefined {
  const changed = statSync(path, { throwIfNoEntry: false })?.mtimeMs;
  const old = changed !== undefined && Date.now() - changed > UNOWNED_GRACE_MS;
  return old ? { id, dataDir: undefined } : undefined;
}

/** The data dir line of an owner file: absent from older ones, checked rather than trusted. */
function dataDirOf(line: string): string | undefined {
  try {
    const parsed: unknown = JSON.parse(line);
    return typeof parsed === 'string' && parsed.startsWith('/') ? parsed : undefined;
  } catch (err) {
    if (err instanceof SyntaxError) return undefined;
    throw err;
  }
}
