/**
 * Stopping the native front door stops all of it. HAProxy runs as a master with a worker and the
 * relay beside it, all in the master's own session. A master that does not stop on SIGTERM is
 * killed after 5 s; before, only the master was, and its worker went on holding the visitors'
 * address (the next start could not listen) with the relay beside it, until the host rebooted.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, describe, expect, it } from 'vitest';
import { openFrontDoor, stopFrontDoor } from '../../src/front/front-door.js';
import { findHaproxy } from '../../src/front/haproxy/haproxy-process.js';
import { processTree, signal } from '../../src/runtime/local/process-tree.js';
import { processRef, runs } from '../../src/runtime/local/teardown.js';
import { freePort } from '../support/server-process.js';

const dataDir = mkdtempSync(join(tmpdir(), 'slipway-front-stop-'));
const server = createServer((_req, res) => res.end('cp'));
let group: number | undefined;

afterAll(() => {
  // Whatever the test found, nothing of this front door outlives it.
  if (group !== undefined) signal(-group, 'SIGKILL');
  server.close();
  rmSync(dataDir, { recursive: true, force: true });
});

/** Whether the port takes a listener of ours within 10 s. */
async function bindable(port: number): Promise<boolean> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const ok = await new Promise<boolean>((resolve) => {
      const probe = net.createServer();
      probe.once('error', () => resolve(false));
      probe.listen(port, '127.0.0.1', () => probe.close(() => resolve(true)));
    });
    if (ok || Date.now() > deadline) return ok;
    await sleep(50);
  }
}

describe('stopping the native front door', () => {
  it('ends its worker and relay too when the master must be killed', async () => {
    const haproxy = findHaproxy();
    if (haproxy === undefined) throw new Error('haproxy is missing');
    const port = await freePort();
    const door = await openFrontDoor({
      dataDir,
      host: '127.0.0.1',
      port,
      server,
      log: () => undefined,
      native: { haproxy, slots: 1, threads: 1, headersTimeoutMs: 10_000 },
    });
    await door.stopAccepting();
    const state = JSON.parse(readFileSync(join(dataDir, 'front', 'front.json'), 'utf8')) as {
      pid: number;
    };
    group = state.pid;
    const pids = processTree(state.pid).map((p) => processRef(p.pid));
    // The master, its worker and the relay it runs.
    expect(pids.length).toBeGreaterThanOrEqual(3);

    // A master that cannot act on SIGTERM: stopped, it is killed at the 5 s deadline.
    signal(state.pid, 'SIGSTOP');
    await stopFrontDoor(dataDir, () => undefined);

    expect(await bindable(port)).toBe(true);
    expect(pids.filter(runs)).toEqual([]);
  }, 30_000);
});
