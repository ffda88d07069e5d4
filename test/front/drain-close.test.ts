/**
 * A draining control plane still answers a visitor's GET on an open connection, and ends that
 * connection with it (`Connection: close`): the visitor's next request opens a new one, which the
 * front door holds for the next control plane. HAProxy keeps a visitor's connection open when only
 * its own to the control plane ends, so on the native path the answer must reach the visitor with
 * `Connection: close` too, and the connection must end. Runs on both data paths (vitest.config.ts).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openFrontDoor, type FrontDoor } from '../../src/front/front-door.js';
import { findHaproxy } from '../../src/front/haproxy/haproxy-process.js';
import { Drain } from '../../src/http/drain.js';
import { testDataPath } from '../support/data-path.js';
import { freePort } from '../support/server-process.js';

const dataDir = mkdtempSync(join(tmpdir(), 'slipway-drain-close-'));
const drain = new Drain();
let server: Server;
let door: FrontDoor;
let release: (() => void) | undefined;
let holding: (() => void) | undefined;

beforeAll(async () => {
  server = createServer((req, res) => {
    if (!drain.admit(res, true)) return;
    if (req.url !== '/hold') {
      res.end('now');
      return;
    }
    release = () => res.end('held');
    holding?.();
  });
  drain.watch(server);
  const haproxy = findHaproxy();
  if (testDataPath() === 'native' && haproxy === undefined) throw new Error('haproxy is missing');
  door = await openFrontDoor({
    dataDir,
    host: '127.0.0.1',
    port: await freePort(),
    server,
    log: () => undefined,
    ...(testDataPath() === 'native' && haproxy
      ? { native: { haproxy, slots: 1, threads: 1, headersTimeoutMs: 10_000 } }
      : {}),
  });
  drain.acceptFrom(door);
}, 60_000);

afterAll(async () => {
  release?.();
  await drain.run(5_000);
  await door.abandon();
  server.close();
  rmSync(dataDir, { recursive: true, force: true });
});

interface Answer {
  status: number;
  head: string;
  body: string;
}

/** A visitor's own keep-alive connection, on which it sends requests one at a time. */
class Visitor {
  readonly socket: net.Socket;
  readonly ended: Promise<void>;
  private buffered = '';
  private waiting: (() => void) | undefined;

  constructor(port: number) {
    this.socket = net.connect(port, '127.0.0.1');
    this.socket.setEncoding('latin1');
    this.socket.on('data', (chunk: string) => {
      this.buffered += chunk;
      this.waiting?.();
    });
    this.ended = new Promise((resolve) => this.socket.once('close', () => resolve()));
    this.socket.on('error', () => undefined);
  }

  async get(path: string): Promise<Answer> {
    this.socket.write(`GET ${path} HTTP/1.1\r\nHost: localhost\r\n\r\n`);
    for (;;) {
      const answer = this.take();
      if (answer) return answer;
      await new Promise<void>((resolve) => (this.waiting = resolve));
    }
  }

  /** One whole answer (content-length bodies only: all this server sends), if it has come. */
  private take(): Answer | undefined {
    const end = this.buffered.indexOf('\r\n\r\n');
    if (end < 0) return undefined;
    const head = this.buffered.slice(0, end).toLowerCase();
    const length = Number(/\r\ncontent-length: *(\d+)/.exec(head)?.[1] ?? 0);
    if (this.buffered.length < end + 4 + length) return undefined;
    const body = this.buffered.slice(end + 4, end + 4 + length);
    this.buffered = this.buffered.slice(end + 4 + length);
    return { status: Number(head.slice(9, 12)), head, body };
  }
}

describe(`a draining control plane behind the front door (${testDataPath()} path)`, () => {
  it("ends the visitor's connection with the answer it still gives", async () => {
    const visitor = new Visitor(door.port);
    const before = await visitor.get('/now');
    expect(before).toMatchObject({ status: 200, body: 'now' });
    expect(before.head).not.toMatch(/\r\nconnection: *close/);

    // A request in flight keeps the drain going while the visitor asks again.
    const other = new Visitor(door.port);
    const held = new Promise<void>((resolve) => (holding = resolve));
    const heldAnswer = other.get('/hold');
    await held;
    const drained = drain.run(30_000);

    const during = await visitor.get('/now');
    expect(during).toMatchObject({ status: 200, body: 'now' });
    expect(during.head).toMatch(/\r\nconnection: *close/);
    // The front door's own mark never reaches the visitor.
    expect(during.head).not.toContain('x-slipway');
    await visitor.ended;

    release?.();
    expect(await heldAnswer).toMatchObject({ status: 200, body: 'held' });
    await drained;
  });
});
