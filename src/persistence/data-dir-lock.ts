import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { alive } from '../runtime/local/process-tree.js';

/** A data dir another running server holds: the second one must not touch it. */
export class DataDirLocked extends Error {
  override name = 'DataDirLocked';
  constructor(
    readonly dataDir: string,
    readonly holder: number | undefined,
  ) {
    super(
      `another Slipway server${holder ? ` (pid ${holder})` : ''} is running on the data dir ` +
        `${dataDir}; stop it first, or give this one another server.dataDir`,
    );
  }
}

export interface DataDirLock {
  /** Lets the next server in, once the lock is gone; idempotent. */
  release(): Promise<void>;
}

export const LOCK_FILE = 'slipway.lock';
/** flock(1)'s exit code when the lock is held (`-E`). */
const HELD = 75 as const;
/** The longest a start waits for a sweep of its data dir's leftovers to let go. */
const SWEEP_WAIT_S = 30;

/**
 * Takes the data dir for this process: one server per data dir, or two would destroy each
 * other's sandboxes and runtime dir. The lock is a kernel `flock` on `slipway.lock`, held by a
 * small `flock … cat` child whose stdin is a pipe from us: when this process ends in any way
 * (kill -9 included) the pipe closes, `cat` ends and the kernel lets the lock go, so no stale
 * lock file is ever trusted. The file names the holder's pid for the refusal message.
 */
export async function lockDataDir(dataDir: string): Promise<DataDirLock> {
  const dir = resolve(dataDir);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const file = join(dir, LOCK_FILE);
  // A second's wait: a holder that has just ended may take a moment to let go.
  let child = await flockChild(file, ['--wait', '1']);
  // With the server it names gone, the holder is another instance's start sweeping what that
  // server left (tryLockDataDir): it lets go once done, however slow a loaded machine makes it.
  const named = child === HELD ? holderOf(file) : undefined;
  if (child === HELD && (named === undefined || !alive(named))) {
    child = await flockChild(file, ['--wait', String(SWEEP_WAIT_S)]);
  }
  if (child === HELD) throw new DataDirLocked(dir, holderOf(file));
  writeFileSync(file, `${process.pid}\n`, { mode: 0o600 });
  return { release: () => releaseLock(child) };
}

/**
 * Holds another instance's data dir for a moment, without waiting: undefined while a server holds
 * it (or is starting on it). The lock file keeps its holder's pid: we are not the server there.
 */
export async function tryLockDataDir(dataDir: string): Promise<DataDirLock | undefined> {
  const child = await flockChild(join(resolve(dataDir), LOCK_FILE), ['--nonblock']);
  return child === HELD ? undefined : { release: () => releaseLock(child) };
}

async function flockChild(file: string, wait: string[]): Promise<ChildProcess | typeof HELD> {
  const child = spawn(
    'flock',
    [...wait, '--conflict-exit-code', String(HELD), file, 'sh', '-c', 'echo locked; exec cat'],
    { stdio: ['pipe', 'pipe', 'pipe'], env: { PATH: '/usr/sbin:/usr/bin:/sbin:/bin' } },
  );
  const outcome = await new Promise<'locked' | typeof HELD>((done, fail) => {
    let stderr = '';
    child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.stdout?.once('data', () => done('locked'));
    child.once('error', (err) =>
      fail(new Error(`cannot lock ${file}: flock (util-linux): ${err.message}`)),
    );
    child.once('exit', (code) => {
      if (code === HELD) done(HELD);
      else fail(new Error(`cannot lock ${file}: flock exited ${code}: ${stderr}`));
    });
  });
  if (outcome === HELD) return HELD;
  child.stdout?.resume();
  // The lock must never keep Node alive, nor hold up an exit.
  child.unref();
  for (const stream of [child.stdin, child.stdout, child.stderr]) unrefStream(stream);
  return child;
}

function releaseLock(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  const gone = new Promise<void>((done) => child.once('exit', () => done()));
  // Waited for: this process must not end before the lock is let go.
  child.ref();
  child.stdin?.end();
  return gone;
}

function holderOf(file: string): number | undefined {
  const pid = Number(readFileSync(file, 'utf8').trim());
  return Number.isInteger(pid) && pid > 0 ? pid : undefined;
}

function unrefStream(stream: unknown): void {
  const handle = stream as { unref?: () => void } | null;
  handle?.unref?.();
}
