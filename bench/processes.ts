import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import { connect, createServer } from 'node:net';
import { sleep } from './stats.js';

/** A free loopback TCP port. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

/** Resolves once something accepts a TCP connection on the port (polled every millisecond). */
export async function waitForAccept(port: number, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const ok = await new Promise<boolean>((resolve) => {
      const socket = connect(port, '127.0.0.1');
      socket.once('connect', () => {
        socket.destroy();
        resolve(true);
      });
      socket.once('error', () => resolve(false));
    });
    if (ok) return;
    await sleep(1);
  }
  throw new Error(`nothing accepted on port ${port}`);
}

/** The baseline: `node <script>` spawned by hand, timed until it accepts a connection. */
export async function bareStart(
  script: string,
  cwd: string,
  args: string[] = [],
): Promise<{ ms: number; child: ChildProcess; port: number }> {
  const port = await freePort();
  const started = performance.now();
  const child = spawn(process.execPath, [script, ...args], {
    cwd,
    env: { PATH: process.env.PATH, PORT: String(port) },
    stdio: 'ignore',
  });
  await waitForAccept(port);
  return { ms: performance.now() - started, child, port };
}

export async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  await Promise.race([exited, sleep(3000)]);
  if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
}

/** Resident memory of a process and all its descendants, in bytes. */
export function treeRss(pid: number): number {
  let total = rssOf(pid);
  for (const child of childrenOf(pid)) total += treeRss(child);
  return total;
}

/**
 * Proportional memory (PSS) of a process tree, in bytes: shared pages (the node binary, mapped by
 * every sandbox) split among their users. Reported beside RSS, which counts them in full.
 */
export function treePss(pid: number): number {
  const match = /^Pss:\s+(\d+) kB/m.exec(safeRead(`/proc/${pid}/smaps_rollup`));
  let total = match ? Number(match[1]) * 1024 : 0;
  for (const child of childrenOf(pid)) total += treePss(child);
  return total;
}

export function childrenOf(pid: number): number[] {
  const out: number[] = [];
  for (const task of safeList(`/proc/${pid}/task`)) {
    const text = safeRead(`/proc/${pid}/task/${task}/children`);
    for (const id of text.split(/\s+/).filter(Boolean)) out.push(Number(id));
  }
  return out;
}

export function commandOf(pid: number): string {
  return safeRead(`/proc/${pid}/cmdline`).split('\0').join(' ');
}

/** Resident memory of one process, in bytes (0 once it is gone). */
export function rssOf(pid: number): number {
  const match = /VmRSS:\s+(\d+) kB/.exec(safeRead(`/proc/${pid}/status`));
  return match ? Number(match[1]) * 1024 : 0;
}

function safeRead(path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (err) {
    // Processes come and go while we look; a vanished one simply counts as nothing.
    if (
      (err as NodeJS.ErrnoException).code === 'ENOENT' ||
      (err as NodeJS.ErrnoException).code === 'ESRCH'
    )
      return '';
    throw err;
  }
}

function safeList(path: string): string[] {
  try {
    return readdirSync(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
}
