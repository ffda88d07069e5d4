import type { Cgroup } from './cgroups.js';
import { processTree, signal, statFields, startTime } from './process-tree.js';
import type { Log } from '../../logging.js';

/** How long a running app gets to finish after SIGTERM before everything is SIGKILLed. */
const GRACE_MS = 500;
/** After SIGKILL the kernel needs a moment to tear a pid namespace down. */
const KILL_WAIT_MS = 5_000;

/**
 * Ends a sandbox's whole process tree. A running app gets SIGTERM and a short grace first; the
 * signal goes to the processes inside, not to bwrap or its pid 1, whose death would SIGKILL the
 * rest at once. Then SIGKILL to the sandbox's pid 1: the kernel kills and reaps everything in its
 * pid namespace, and bwrap reaps pid 1, so nothing is left for the host's init to collect. Anything
 * still there after that (or in the sandbox's cgroup) is SIGKILLed one by one.
 * Returns false if some of it was still running at the end.
 */
export async function killTree(opts: {
  pid: number;
  graceful: boolean;
  cgroup: Cgroup | undefined;
  closed: Promise<unknown>;
  isClosed: () => boolean;
}): Promise<boolean> {
  const tree = processTree(opts.pid);
  // Taken now: a process that ends during the grace frees its pid for some other process to take.
  const members = tree.map((p) => processRef(p.pid));
  const init = tree.find((p) => p.ppid === opts.pid)?.pid;
  const inner = tree.filter((p) => p.pid !== opts.pid && p.ppid !== opts.pid).map((p) => p.pid);
  if (opts.graceful && inner.length > 0) {
    inner.forEach((p) => signal(p, 'SIGTERM'));
    await Promise.race([opts.closed, sleep(GRACE_MS)]);
  }
  if (!opts.isClosed()) {
    signal(init ?? opts.pid, 'SIGKILL');
    await Promise.race([opts.closed, sleep(1_000)]);
  }
  const all = [...members, ...(opts.cgroup?.pids() ?? []).map(processRef)];
  if (!opts.isClosed()) {
    for (const ref of all.filter(runs)) signal(ref.pid, 'SIGKILL');
    await Promise.race([opts.closed, sleep(KILL_WAIT_MS)]);
  }
  return (await gone(all)) && opts.isClosed();
}

/**
 * One process, known by its pid and its start time: once it ends, its pid may be given to another
 * (a fork bomb next door goes through the whole pid range in seconds), which must not be waited
 * on, let alone killed.
 */
export interface ProcessRef {
  pid: number;
  started: string;
}

/** The process that has the pid now. */
export function processRef(pid: number): ProcessRef {
  return { pid, started: startTime(pid) };
}

/**
 * Waits until none of the processes runs any more, SIGKILLing stragglers. A zombie has run its
 * course: once its parent is gone, reaping it is the host init's business.
 */
export async function gone(refs: ProcessRef[]): Promise<boolean> {
  const deadline = Date.now() + KILL_WAIT_MS;
  for (;;) {
    const left = refs.filter(runs);
    if (left.length === 0) return true;
    if (Date.now() > deadline) return false;
    left.forEach((ref) => signal(ref.pid, 'SIGKILL'));
    await sleep(5);
  }
}

/** True while this very process exists and is not a zombie: not once its pid is another's. */
export function runs(ref: ProcessRef): boolean {
  const fields = statFields(ref.pid);
  return fields !== undefined && fields[0] !== 'Z' && fields[19] === ref.started;
}

/** A cgroup can be removed only once the kernel has finished with its last task. */
export async function removeCgroup(cgroup: Cgroup | undefined, log: Log): Promise<void> {
  if (!cgroup) return;
  for (let attempt = 0; ; attempt += 1) {
    try {
      cgroup.remove();
      return;
    } catch (err) {
      if (attempt >= 50) {
        log('info', 'cgroup not removed', { error: String(err), pids: cgroup.pids() });
        return;
      }
      cgroup.pids().forEach((p) => signal(p, 'SIGKILL'));
      await sleep(10);
    }
  }
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}
