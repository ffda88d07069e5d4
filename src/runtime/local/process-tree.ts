import { existsSync, readdirSync, readFileSync } from 'node:fs';

/**
 * The pid and every descendant of it, parents before children, read from /proc (host pids: the
 * sandbox's own pid namespace is invisible from here, its processes are not). Each process's
 * threads list their children, so a sandbox's tree costs a few reads, not one per process on the
 * host: a reap runs on the event loop, beside every other app's requests.
 */
export function processTree(root: number): { pid: number; ppid: number }[] {
  if (!alive(root)) return [];
  const children = HAS_CHILDREN_LISTS ? childrenListed : hostScan();
  const tree = [{ pid: root, ppid: 0 }];
  const seen = new Set([root]);
  // The array iterator also visits what the loop appends: a breadth-first walk.
  for (const { pid } of tree) {
    for (const child of children(pid)) {
      // A pid freed and taken again mid-walk must not be walked twice.
      if (seen.has(child)) continue;
      seen.add(child);
      tree.push({ pid: child, ppid: pid });
    }
  }
  return tree;
}

/** `/proc/<pid>/task/<tid>/children` needs a kernel built with CONFIG_PROC_CHILDREN. */
const HAS_CHILDREN_LISTS = existsSync(`/proc/${process.pid}/task/${process.pid}/children`);

function childrenListed(pid: number): number[] {
  const found: number[] = [];
  for (const tid of gonePasses(() => readdirSync(`/proc/${pid}/task`), [])) {
    const list = gonePasses(() => readFileSync(`/proc/${pid}/task/${tid}/children`, 'utf8'), '');
    for (const child of list.split(' ')) if (child !== '') found.push(Number(child));
  }
  return found;
}

/** Without children lists: every process on the host, grouped by parent. */
function hostScan(): (pid: number) => number[] {
  const children = new Map<number, number[]>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const ppid = parentOf(Number(name));
    if (ppid === undefined) continue;
    const list = children.get(ppid) ?? [];
    list.push(Number(name));
    children.set(ppid, list);
  }
  return (pid) => children.get(pid) ?? [];
}

/** A read of a process that exited meanwhile (or a thread that did) gives `otherwise`. */
function gonePasses<T>(read: () => T, otherwise: T): T {
  try {
    return read();
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ESRCH') return otherwise;
    throw err;
  }
}

export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM means it exists but is not ours to signal: still alive.
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Sends a signal, treating "already gone" as done. */
export function signal(pid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(pid, sig);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ESRCH') throw err;
  }
}

function parentOf(pid: number): number | undefined {
  // It may exit between readdir and here: then it is part of no one's tree any more.
  const fields = statFields(pid);
  return fields === undefined ? undefined : Number(fields[1]);
}

/** Field 22 of /proc/<pid>/stat (clock ticks since boot), or '' when the pid does not run. */
export function startTime(pid: number): string {
  return statFields(pid)?.[19] ?? '';
}

/**
 * The fields of /proc/<pid>/stat after the command name (state first), or undefined once the pid
 * is gone. The name may hold spaces and parens: the fields start after the last ')'.
 */
export function statFields(pid: number): string[] | undefined {
  const stat = gonePasses(() => readFileSync(`/proc/${pid}/stat`, 'utf8'), undefined);
  return stat?.slice(stat.lastIndexOf(')') + 2).split(' ');
}
