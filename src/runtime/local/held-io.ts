import { execFile } from 'node:child_process';
import { closeSync, constants, openSync } from 'node:fs';
import net from 'node:net';
import { join } from 'node:path';
import { promisify } from 'node:util';

/**
 * A sandbox's fds 1, 2 and the agent's diagnostics fd, as FIFOs in its held dir (the host's, never
 * bound into the sandbox) instead of pipes to this process: they outlive it. The sandbox holds
 * each FIFO read-write, so its writes never meet a closed pipe while no control plane reads (they
 * wait in the pipe's buffer, and a writer blocks once 64 KiB wait); the next control plane opens
 * the same FIFOs and reads on where the last one stopped. Every writer is inside the sandbox, so
 * the end of all three streams is the end of the sandbox's whole process tree.
 */
export const HELD_STREAMS = ['out', 'err', 'diag'] as const;
export type HeldStream = (typeof HELD_STREAMS)[number];

/** Makes the three FIFOs, `0600`, in `dir` (off the event loop: pools boot in the background). */
export async function makeFifos(dir: string): Promise<void> {
  await promisify(execFile)('mkfifo', ['-m', '600', ...HELD_STREAMS.map((n) => join(dir, n))], {
    env: { PATH: '/usr/bin:/bin' },
  });
}

/** Read-write fds on the FIFOs, for the sandbox process: ours are closed once it has them. */
export function openWriters(dir: string): Record<HeldStream, number> {
  return openEach(dir, constants.O_RDWR | constants.O_NOFOLLOW);
}

/**
 * Our read ends, as streams on the event loop (never the thread pool, which a read blocking on an
 * idle FIFO would take for as long as the sandbox lives).
 */
export function openReaders(dir: string): Record<HeldStream, net.Socket> {
  const fds = openEach(dir, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOFOLLOW);
  const out = {} as Record<HeldStream, net.Socket>;
  for (const name of HELD_STREAMS) {
    out[name] = new net.Socket({ fd: fds[name], readable: true, writable: false });
  }
  return out;
}

export function closeFds(fds: Record<HeldStream, number>): void {
  for (const name of HELD_STREAMS) closeSync(fds[name]);
}

function openEach(dir: string, flags: number): Record<HeldStream, number> {
  const fds: Partial<Record<HeldStream, number>> = {};
  try {
    for (const name of HELD_STREAMS) fds[name] = openSync(join(dir, name), flags);
  } catch (err) {
    for (const fd of Object.values(fds)) closeSync(fd);
    throw err;
  }
  return fds as Record<HeldStream, number>;
}
