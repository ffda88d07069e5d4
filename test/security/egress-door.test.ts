/**
 * Attacks on one sandbox's egress door, a real gate on a real unix socket: connection floods
 * (file descriptors), trickled request heads, and ports the app did not name.
 */
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createEgressGate } from '../../src/runtime/egress/egress-gate.js';
import { SharedCount } from '../../src/runtime/egress/egress-limits.js';

const dir = mkdtempSync(join(tmpdir(), 'slipway-egress-sec-'));
const servers: net.Server[] = [];
const sockets: net.Socket[] = [];
let upstream: http.Server;
let upstreamPort: number;
let count = 0;

beforeAll(async () => {
  upstream = http.createServer((_, res) => res.end('upstream'));
  await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
  upstreamPort = (upstream.address() as net.AddressInfo).port;
});

afterEach(async () => {
  for (const s of sockets.splice(0)) s.destroy();
  await Promise.all(servers.splice(0).map((s) => new Promise((r) => s.close(r))));
});

afterAll(async () => {
  upstream.closeAllConnections();
  await new Promise((r) => upstream.close(r));
  rmSync(dir, { recursive: true, force: true });
});

async function gate(opts: Partial<Parameters<typeof createEgressGate>[0]> = {}) {
  const server = createEgressGate({
    allowedHosts: [`127.0.0.1:${upstreamPort}`],
    allowPrivate: ['127.0.0.1'],
    ...opts,
  } as Parameters<typeof createEgressGate>[0]);
  const path = join(dir, `g${++count}.sock`);
  await new Promise<void>((r) => server.listen(path, r));
  servers.push(server);
  return { server, path };
}

const openConnections = (server: net.Server) =>
  new Promise<number>((resolve, reject) =>
    server.getConnections((err, n) => (err ? reject(err) : resolve(n))),
  );

interface Trickler {
  socket: net.Socket;
  closedAt?: number;
  reply: string;
}

/** Opens a connection that sends one byte of a request head every `everyMs`, never finishing. */
function trickle(path: string, everyMs: number): Trickler {
  const socket = net.connect(path);
  sockets.push(socket);
  const t: Trickler = { socket, reply: '' };
  const head = `GET http://127.0.0.1:${upstreamPort}/ HTTP/1.1\r\nX-Slow: ${'a'.repeat(10_000)}`;
  let at = 0;
  const timer = setInterval(() => {
    if (!socket.destroyed && at < head.length) socket.write(head[at++] ?? 'a');
  }, everyMs);
  socket.on('data', (c: Buffer) => (t.reply += c.toString()));
  socket.on('error', () => undefined);
  socket.on('close', () => {
    clearInterval(timer);
    t.closedAt = Date.now();
  });
  return t;
}

async function until(what: string, cond: () => boolean | Promise<boolean>, ms = 10_000) {
  const deadline = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

describe('egress door: connection floods', () => {
  it('holds at most its per-sandbox cap of trickling clients, closing the rest at once', async () => {
    const { server, path } = await gate({ limits: { perSandbox: 256, headTimeoutMs: 60_000 } });
    const fdsBefore = readdirSync('/proc/self/fd').length;
    const flood = Array.from({ length: 2_000 }, () => trickle(path, 200));
    // Settled: every client either closed or held, and the door holds exactly its cap.
    await until(
      'the excess to be closed',
      async () =>
        flood.filter((t) => t.closedAt).length === 1_744 && (await openConnections(server)) === 256,
    );
    expect(flood.filter((t) => t.closedAt === undefined)).toHaveLength(256);
    expect(await openConnections(server)).toBe(256);
    // The test holds the client ends (2,000 then 256); the host side holds 256, not 2,000.
    const fdsNow = readdirSync('/proc/self/fd').length;
    expect(fdsNow - fdsBefore).toBeLessThan(256 * 2 + 64);
    // Once some close, new clients get their places back: the cap is on open ones, not a quota.
    for (const t of flood.filter((f) => !f.closedAt).slice(0, 10)) t.socket.destroy();
    await until('the door to see them go', async () => (await openConnections(server)) === 246);
    const reply = await connectReply(path, `127.0.0.1:${upstreamPort}`);
    expect(reply).toMatch(/^HTTP\/1\.1 200 /);
  }, 30_000);

  it('shares one count across doors: the runtime-wide cap holds with many sandboxes', async () => {
    const total = new SharedCount(300);
    const limits = { perSandbox: 256, headTimeoutMs: 60_000, total };
    const a = await gate({ limits });
    const b = await gate({ limits });
    const fromA = Array.from({ length: 256 }, () => trickle(a.path, 200));
    await until('door a to fill', async () => (await openConnections(a.server)) === 256);
    const fromB = Array.from({ length: 256 }, () => trickle(b.path, 200));
    await until(
      'the excess on b to close',
      async () =>
        fromB.filter((t) => t.closedAt).length === 212 && (await openConnections(b.server)) === 44,
    );
    expect(fromB.filter((t) => t.closedAt)).toHaveLength(212);
    expect(total.open).toBe(300);
    expect(fromA.filter((t) => t.closedAt)).toHaveLength(0);
    for (const t of fromA) t.socket.destroy();
    await until('the shared count to drain', () => total.open === 44);
  }, 30_000);

  it('cuts a client that trickles its head at the deadline counted from accept', async () => {
    const { path } = await gate({ limits: { headTimeoutMs: 1_000 } });
    const started = Date.now();
    // A byte every 100 ms: an idle timeout would never fire.
    const slow = trickle(path, 100);
    await until('the slow client to be cut', () => slow.closedAt !== undefined, 8_000);
    expect(slow.reply).toMatch(/^HTTP\/1\.1 408 /);
    // The 408 at 1 s, then at most the 2 s the gate lets a refused client drain.
    expect((slow.closedAt ?? 0) - started).toBeLessThan(3_500);
    expect(slow.reply.indexOf('408')).toBeGreaterThan(-1);
  }, 15_000);
});

/** The status line a CONNECT to `target` gets from the gate at `path`. */
function connectReply(path: string, target: string, request?: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(path);
    sockets.push(socket);
    let got = '';
    socket.on('data', (c: Buffer) => {
      got += c.toString();
      if (!got.includes('\r\n\r\n')) return;
      socket.destroy();
      resolve(got);
    });
    socket.on('error', reject);
    socket.on('close', () => resolve(got));
    socket.write(request ?? `CONNECT ${target} HTTP/1.1\r\nHost: ${target}\r\n\r\n`);
  });
}

describe('egress door: ports', () => {
  it('reaches an entry without a port on 80 and 443 only, by CONNECT and by absolute URI', async () => {
    const { path } = await gate({ allowedHosts: ['127.0.0.1'] });
    for (const request of [
      `CONNECT 127.0.0.1:${upstreamPort} HTTP/1.1\r\n\r\n`,
      `GET http://127.0.0.1:${upstreamPort}/ HTTP/1.1\r\n\r\n`,
    ]) {
      const reply = await connectReply(path, '', request);
      expect(reply).toMatch(/^HTTP\/1\.1 403 /);
      expect(reply).toContain(`port ${upstreamPort} is not allowed`);
    }
  });

  it('reaches a named port, and only that one', async () => {
    const { path } = await gate({ allowedHosts: [`localhost:${upstreamPort}`] });
    const ok = await connectReply(
      path,
      '',
      `GET http://localhost:${upstreamPort}/ HTTP/1.1\r\n\r\n`,
    );
    expect(ok).toMatch(/^HTTP\/1\.1 200 /);
    for (const port of [80, 443, upstreamPort + 1]) {
      expect(await connectReply(path, `localhost:${port}`)).toMatch(/^HTTP\/1\.1 403 /);
    }
  });

  it('treats a bracketed IPv6 entry with a port the same way', async () => {
    const { path } = await gate({ allowedHosts: ['[::1]:8443'], allowPrivate: ['::1'] });
    const reply = await connectReply(path, `[::1]:${upstreamPort}`);
    expect(reply).toMatch(/^HTTP\/1\.1 403 /);
    expect(reply).toContain(`port ${upstreamPort} is not allowed`);
  });
});
