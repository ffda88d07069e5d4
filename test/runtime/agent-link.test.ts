/**
 * A pool sandbox opens its connection to the agent while it waits, and the inject and the health
 * checks after it go over that one connection: a new connection wakes a sleeping agent twice (to
 * accept, then to read), and on a busy host each wake costs about a millisecond of the deploy.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agentLink, callAgent } from '../../src/runtime/local/agent-client.js';
import type { LocalSandbox } from '../../src/runtime/local/sandbox.js';
import { claimOnly, eventually, inject, startRuntime, type TestRuntime } from './support.js';

let t: TestRuntime;
beforeAll(async () => {
  t = await startRuntime({ poolSize: 1 });
});
afterAll(() => t.close());

/** The link's idle connections. */
function idle(sandbox: LocalSandbox): Socket[] {
  return Object.values(sandbox.link.freeSockets).flatMap((list) => list ?? []);
}

describe('the agent link', () => {
  it('is open before the claim, and the inject and health checks use that connection', async () => {
    const sandbox = await claimOnly(t, 'node', 'linked');
    await eventually(() => idle(sandbox).length === 1, 'the link to be open');
    const [opened] = idle(sandbox);

    await inject(
      t,
      sandbox,
      'node',
      {
        'package.json': JSON.stringify({ main: 'server.js' }),
        'server.js':
          "require('node:http').createServer((q, s) => s.end('ok')).listen(process.env.PORT);",
      },
      { appId: 'linked' },
    );
    expect(idle(sandbox)).toEqual([opened]);
    expect(await t.runtime.health(sandbox)).toBe(true);
    expect(await t.runtime.health(sandbox)).toBe(true);
    expect(idle(sandbox)).toEqual([opened]);
  });

  it('makes a call again on a new connection when the kept one broke before any answer', async () => {
    // An agent that answers the first request on each connection and drops the connection at the
    // second: what a kept connection the agent closed meanwhile looks like to the next call.
    const dir = mkdtempSync(join(tmpdir(), 'slipway-link-'));
    const path = join(dir, 'agent.sock');
    const seen = new WeakMap<Socket, number>();
    let connections = 0;
    const server = createServer((req, res) => {
      const n = (seen.get(req.socket) ?? 0) + 1;
      seen.set(req.socket, n);
      if (n > 1) return req.socket.destroy();
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ n }));
    });
    server.on('connection', () => (connections += 1));
    await new Promise<void>((resolve) => server.listen(path, resolve));
    const link = agentLink();
    try {
      const call = () => callAgent(path, 'token', 'GET', '/status', { timeoutMs: 5_000, link });
      expect(await call()).toEqual({ status: 200, body: { n: 1 } });
      expect(await call()).toEqual({ status: 200, body: { n: 1 } });
      expect(connections).toBe(2);
    } finally {
      link.destroy();
      server.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
