import { readdirSync, readFileSync } from 'node:fs';

/**
 * The pid and every descendant of it, parents before children, read from /proc (host pids: the
 * sandbox's own pid namespace is invisible from here, its processes are not).
 */
export function processTree(root: number): { pid: number; ppid: number }[] {
  const children = new Map<number, number[]>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const ppid = parentOf(Number(name));
    if (ppid === undefined) continue;
    const list = children.get(ppid) ?? [];
    list.push(Number(name));
    children.set(ppid, list);
  }
  const tree: { pid: number; ppid: number }[] = [];
  const queue = alive(root) ? [{ pid: root, ppid: 0 }] : [];
  while (queue.length > 0) {
    const node = queue.shift() as { pid: number; ppid: number };
    tree.push(node);
    for (const child of children.get(node.pid) ?? []) queue.push({ pid: child, ppid: node.pid });
  }
  return tree;
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
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch (err) {
    // It exited between readdir and here: not part of anyone's tree any more.
    if (
      (err as NodeJS.ErrnoException).code === 'ENOENT' ||
      (err as NodeJS.ErrnoException).code === 'ESRCH'
    ) {
      return undefined;
    }
    throw err;
  }
  // The command name may hold spaces and parens: the fields start after the last ')'.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return Number(fields[1]);
}

/** Field 22 of /proc/<pid>/stat (clock ticks since boot), or '' when the pid does not run. */
export function startTime(pid: number): string {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] ?? '';
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ESRCH') return '';
    throw err;
  }
}
