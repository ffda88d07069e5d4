/**
 * The front door's relay (src/front/relay.ts) holds a visitor whose control plane went away
 * between two requests: the next request on that kept-alive connection waits for the next
 * control plane (up to the hold time), however long that one takes to listen. Before, the idle
 * timer set while the connection sat unused kept running once that request came, and cut it
 * after `idleMs`: 19 of 20 clients got "socket hang up" when a slow start took longer than that.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { Agent, createServer, request } from 'node:http';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, describe, expect, it } from 'vitest';
import { relay } from '../../src/front/relay.js';
import { acceptRelayed } from '../../src/front/relayed-connections.js';

const dir = mkdtempSync(join(tmpdir(), 'slipway-relay-hold-'));
const socketPath = join(dir, 'cp.sock');
const IDLE_MS = 200;
const closers: (() => Promise<void>)[] = [];

afterAll(async () => {
  for (const close of closers) await close();
  rmSync(dir, { recursive: true, force: true });
});

interface ControlPlane {
  listener: net.Server;
  conns: Set<net.Socket>;
}

/** A control plane on the unix socket, answering with its name. */
async function controlPlane(name: string): Promise<ControlPlane> {
  const http = createServer((_req, res) => res.end(name));
  const conns = new Set<net.Socket>();
  const listener = net.createServer((conn) => {
    conns.add(conn);
    conn.once('close', () => conns.delete(conn));
    acceptRelayed(conn, http);
  });
  await new Promise<void>((resolve) => listener.listen(socketPath, resolve));
  return { listener, conns };
}

/** Its stop: no new connections, and those it has (kept-alive, idle) closed. */
async function stop(cp: ControlPlane): Promise<void> {
  const closed = new Promise((resolve) => cp.listener.close(resolve));
  for (const conn of cp.conns) conn.destroy();
  await closed;
}

function get(agent: Agent, port: number): Promise<{ body: string; reused: boolean }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, agent, path: '/' }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve({ body, reused: req.reusedSocket }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('the front door relay', () => {
  it('holds a kept-alive visitor’s next request until a control plane listens, past idleMs', async () => {
    const front = net.createServer({ pauseOnConnect: true }, (client) =>
      relay(client, { socketPath, holdMs: 30_000, idleMs: IDLE_MS, log: () => undefined }),
    );
    await new Promise<void>((resolve) => front.listen(0, '127.0.0.1', resolve));
    closers.push(() => new Promise((resolve) => front.close(() => resolve())));
    const port = (front.address() as net.AddressInfo).port;
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    closers.push(async () => agent.destroy());

    const first = await controlPlane('first');
    expect(await get(agent, port)).toEqual({ body: 'first', reused: false });
    await stop(first);
    // The relay reads the end of its connection to `first` (already in the kernel) on the next
    // turns of the event loop, and keeps the visitor's connection for the next control plane.
    for (let turn = 0; turn < 3; turn += 1) await new Promise((resolve) => setImmediate(resolve));

    // The next request comes while no control plane listens, and the next one takes several
    // times idleMs to come up: the request waits for it on the same connection.
    const answered = get(agent, port);
    await sleep(IDLE_MS * 4);
    const second = await controlPlane('second');
    closers.push(() => stop(second));
    expect(await answered).toEqual({ body: 'second', reused: true });
  });
});
