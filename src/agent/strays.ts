import { readdirSync } from 'node:fs';
import { warn } from './diag.js';

/** A daemon that forks as fast as it is killed gets this many sweeps; the pids limit bounds it. */
const ROUNDS = 50;

/**
 * Kills every process in the sandbox's pid namespace but bwrap's init (pid 1), this agent and
 * the ones named: after an install step nothing it started may live on into the app (a setsid
 * daemon from a `preinstall` script leaves the step's process group, not the namespace).
 * Returns how many were killed.
 */
export async function killStrays(keep: (number | undefined)[]): Promise<number> {
  const spare = new Set([1, process.pid, ...keep.filter((p): p is number => p !== undefined)]);
  let killed = 0;
  for (let round = 0; round < ROUNDS; round += 1) {
    const strays = readdirSync('/proc')
      .filter((name) => /^\d+$/.test(name))
      .map(Number)
      .filter((pid) => !spare.has(pid));
    if (strays.length === 0) return killed;
    for (const pid of strays) {
      try {
        process.kill(pid, 'SIGKILL');
        killed += 1;
      } catch (err) {
        // ESRCH: it ended between the listing and the kill.
        if ((err as NodeJS.ErrnoException).code !== 'ESRCH') throw err;
      }
    }
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  warn('processes left by the install step survived every sweep');
  return killed;
}
