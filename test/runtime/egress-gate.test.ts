import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  createEgressGate,
  hostAllowed,
  isPrivateAddress,
  type EgressGateOptions,
} from '../../src/runtime/egress/egress-gate.js';

// The "external" host is a real HTTP server on loopback; names reach it through a resolve override,
// and allowPrivate lets the gate use loopback exactly as an operator would for an internal API.
let upstream: http.Server;
let upstreamPort: number;
let upstreamConnections = 0;
const dir = mkdtempSync(join(tmpdir(), 'slipway-egress-'));
const gates: net.Server[] = [];
const clients: net.Socket[] = [];

function dial(path: string): net.Socket {
  const socket = net.connect(path);
  clients.push(socket);
  return socket;
}
let gateCount = 0;

beforeAll(async () => {
  upstream = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      res.setHeader('content-type', 'application/json');
      res.end(
        JSON.stringify({
          method: req.method,
          url: req.url,
          headers: req.headers,
          body: Buffer.concat(chunks).toString(),
        }),
      );
    });
  });
  upstream.on('connection', () => upstreamConnections++);
  await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
  upstreamPort = (upstream.address() as net.AddressInfo).port;
});

afterEach(async () => {
  // A gate that misbehaves must fail its test, not hang the suite in server.close().
  for (const socket of clients.splice(0)) socket.destroy();
  await Promise.all(gates.splice(0).map((g) => new Promise((r) => g.close(r))));
});

afterAll(async () => {
  upstream.closeAllConnections();
  await new Promise((r) => upstream.close(r));
  rmSync(dir, { recursive: true, force: true });
});

const openUpstreamConnections = () =>
  new Promise<number>((resolve, reject) =>
    upstream.getConnections((err, count) => (err ? reject(err) : resolve(count))),
  );

interface Gate {
  path: string;
  logs: { msg: string; extra?: object }[];
  resolve: ReturnType<typeof vi.fn>;
}

const names: Record<string, string[]> = {
  'api.test': ['127.0.0.1'],
  'evil.test': ['127.0.0.1'],
};

async function startGate(opts: Partial<EgressGateOptions> = {}): Promise<Gate> {
  const logs: Gate['logs'] = [];
  const resolve = vi.fn(async (host: string) => {
    const found = names[host];
    if (!found) throw Object.assign(new Error('not found'), { code: 'ENOTFOUND' });
    return found;
  });
  const server = createEgressGate({
    allowedHosts: [`api.test:${upstreamPort}`],
    allowPrivate: ['127.0.0.1'],
    resolve,
    log: (_level, msg, extra) => logs.push({ msg, extra }),
    ...opts,
  });
  const path = join(dir, `egress-${++gateCount}.sock`);
  await new Promise<void>((r) => server.listen(path, r));
  gates.push(server);
  return { path, logs, resolve };
}

/** Writes `text` to the gate and returns everything it sends back until it closes. */
function exchange(path: string, text: string | Buffer): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = dial(path);
    const chunks: Buffer[] = [];
    // Every exchange here ends in well under a second; a gate that leaves one open has hung.
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`gate left the exchange open: ${Buffer.concat(chunks).toString()}`));
    }, 5_000);
    socket.on('data', (c: Buffer) => chunks.push(c));
    socket.on('error', reject);
    socket.on('close', () => {
      clearTimeout(timer);
      resolve(Buffer.concat(chunks).toString('latin1'));
    });
    socket.write(text);
  });
}

const status = (response: string) => Number(/^HTTP\/1\.1 (\d{3}) /.exec(response)?.[1]);
const bodyOf = (response: string) => response.slice(response.indexOf('\r\n\r\n') + 4);

/** CONNECT, then an HTTP request inside the tunnel; returns the gate's reply and the inner body. */
async function tunnelGet(path: string, host = 'api.test', port = upstreamPort) {
  const inner = `GET /through-tunnel HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`;
  const raw = await exchange(
    path,
    `CONNECT ${host}:${port} HTTP/1.1\r\nHost: ${host}\r\n\r\n${inner}`,
  );
  const [established = '', ...rest] = raw.split('\r\n\r\n');
  return { established, raw, inner: rest.slice(1).join('\r\n\r\n') };
}

describe('egress gate: tunnels and forwarding', () => {
  it('tunnels CONNECT to an allowed host end to end, bytes sent early included', async () => {
    const gate = await startGate();
    const { established, inner } = await tunnelGet(gate.path);
    expect(established).toBe('HTTP/1.1 200 Connection Established');
    expect(JSON.parse(inner)).toMatchObject({ method: 'GET', url: '/through-tunnel' });
    expect(gate.logs).toContainEqual({
      msg: 'egress allowed',
      extra: expect.objectContaining({
        host: 'api.test',
        port: upstreamPort,
        method: 'CONNECT',
        address: '127.0.0.1',
      }),
    });
    // Resolved once and dialled by address: a second answer cannot swap in another target.
    expect(gate.resolve).toHaveBeenCalledTimes(1);
  });

  it('tunnels bytes the client sends only after the 200', async () => {
    const gate = await startGate();
    const socket = dial(gate.path);
    let seen = '';
    const done = new Promise<void>((r) => socket.on('close', () => r()));
    socket.on('data', (c: Buffer) => {
      seen += c.toString();
      if (seen === 'HTTP/1.1 200 Connection Established\r\n\r\n') {
        socket.write('GET /late HTTP/1.1\r\nHost: api.test\r\nConnection: close\r\n\r\n');
      }
    });
    socket.write(`CONNECT api.test:${upstreamPort} HTTP/1.1\r\n\r\n`);
    await done;
    expect(JSON.parse(bodyOf(seen.split('\r\n\r\n').slice(1).join('\r\n\r\n')))).toMatchObject({
      url: '/late',
    });
  });

  it('forwards an absolute-URI GET in origin-form without proxy or hop-by-hop headers', async () => {
    const gate = await startGate();
    const res = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = http.request({
        socketPath: gate.path,
        path: `http://api.test:${upstreamPort}/path?q=1`,
        headers: {
          'Proxy-Authorization': 'Basic c2VjcmV0',
          'Proxy-Connection': 'keep-alive',
          Connection: 'keep-alive, X-Drop-Me',
          'X-Drop-Me': '1',
          'X-Keep': 'yes',
        },
      });
      req.on('response', (r) => {
        let body = '';
        r.on('data', (c: Buffer) => (body += c.toString()));
        r.on('end', () => resolve({ status: r.statusCode ?? 0, body }));
      });
      req.on('error', reject);
      req.end();
    });
    expect(res.status).toBe(200);
    const seen = JSON.parse(res.body) as { url: string; headers: Record<string, string> };
    expect(seen.url).toBe('/path?q=1');
    expect(seen.headers).toMatchObject({
      host: `api.test:${upstreamPort}`,
      connection: 'close',
      'x-keep': 'yes',
    });
    expect(seen.headers).not.toHaveProperty('proxy-authorization');
    expect(seen.headers).not.toHaveProperty('proxy-connection');
    expect(seen.headers).not.toHaveProperty('x-drop-me');
  });

  it('forwards a request body and never logs it or proxy credentials', async () => {
    const gate = await startGate();
    const body = 'secret-body-123';
    const raw = await exchange(
      gate.path,
      `POST http://API.test.:${upstreamPort}/submit HTTP/1.1\r\nProxy-Authorization: Basic c2VjcmV0\r\n` +
        `Content-Length: ${body.length}\r\n\r\n${body}`,
    );
    expect(status(raw)).toBe(200);
    expect(JSON.parse(bodyOf(raw))).toMatchObject({ method: 'POST', url: '/submit', body });
    const logged = JSON.stringify(gate.logs);
    expect(logged).toContain('egress allowed');
    expect(logged).not.toContain(body);
    expect(logged).not.toContain('c2VjcmV0');
  });
});

describe('egress gate: allowed_hosts', () => {
  it('refuses a host that is not on the list with 403, before any DNS lookup', async () => {
    const gate = await startGate();
    for (const request of [
      `CONNECT evil.test:${upstreamPort} HTTP/1.1\r\n\r\n`,
      `GET http://evil.test:${upstreamPort}/ HTTP/1.1\r\n\r\n`,
    ]) {
      const raw = await exchange(gate.path, request);
      expect(status(raw)).toBe(403);
      expect(bodyOf(raw)).toMatch(/evil\.test.*not in egress\.allowed_hosts/);
    }
    expect(gate.resolve).not.toHaveBeenCalled();
    expect(gate.logs).toContainEqual({
      msg: 'egress denied',
      extra: expect.objectContaining({ host: 'evil.test', port: upstreamPort }),
    });
  });

  it('refuses everything when the list is empty', async () => {
    const gate = await startGate({ allowedHosts: [] });
    const raw = await exchange(gate.path, `CONNECT api.test:${upstreamPort} HTTP/1.1\r\n\r\n`);
    expect(status(raw)).toBe(403);
    expect(bodyOf(raw)).toMatch(/api\.test.*not in egress\.allowed_hosts.*empty/);
    expect(gate.resolve).not.toHaveBeenCalled();
  });

  it.each([
    ['api.example.com', true],
    ['a.b.c.example.com', true],
    ['API.Example.COM', true],
    ['api.example.com.', true],
    ['example.com', false],
    ['badexample.com', false],
    ['example.com.evil.net', false],
    ['', false],
  ])('*.example.com matches %j: %s', (host, expected) => {
    expect(hostAllowed(host, ['*.example.com'])).toBe(expected);
  });

  it.each([
    ['Example.COM.', ['example.com'], true],
    ['example.com', ['EXAMPLE.com.'], true],
    ['www.example.com', ['example.com'], false],
    ['93.184.216.34', ['93.184.216.34'], true],
    ['93.184.216.35', ['93.184.216.34'], false],
    ['[2001:db8::1]', ['2001:DB8:0:0::1'], true],
    ['1.2.3.4', ['*.3.4'], false],
    ['anything.net', ['*'], false],
    ['api.test', [], false],
  ])('%j against %j: %s', (host, list, expected) => {
    expect(hostAllowed(host, list)).toBe(expected);
  });
});

describe('egress gate: private addresses', () => {
  it.each([
    ['10.1.2.3', true],
    ['172.16.0.1', true],
    ['172.31.255.255', true],
    ['172.32.0.1', false],
    ['192.168.1.1', true],
    ['127.0.0.1', true],
    ['127.255.0.9', true],
    ['169.254.169.254', true],
    ['100.64.0.1', true],
    ['100.128.0.1', false],
    ['0.0.0.0', true],
    ['224.0.0.1', true],
    ['8.8.8.8', false],
    ['93.184.216.34', false],
    ['::', true],
    ['::1', true],
    ['fc00::1', true],
    ['fd12:3456::1', true],
    ['fe80::1', true],
    ['fe80::1%eth0', true],
    ['ff02::1', true],
    ['::ffff:127.0.0.1', true],
    ['::ffff:7f00:1', true],
    ['::ffff:10.0.0.1', true],
    ['::ffff:8.8.8.8', false],
    ['2606:4700::1111', false],
    ['not-an-address', true],
  ])('isPrivateAddress(%j) is %s', (ip, expected) => {
    expect(isPrivateAddress(ip)).toBe(expected);
  });

  it.each([
    ['127.0.0.1', 'loopback'],
    ['10.0.0.5', 'private'],
    ['169.254.169.254', 'link-local'],
    ['::ffff:127.0.0.1', 'IPv4-mapped loopback'],
    ['fe80::1', 'link-local'],
  ])('refuses an allowed name that resolves to %s without allowPrivate', async (address, kind) => {
    names['inside.test'] = [address];
    const gate = await startGate({
      allowedHosts: [`inside.test:${upstreamPort}`],
      allowPrivate: [],
    });
    const before = upstreamConnections;
    const raw = await exchange(gate.path, `CONNECT inside.test:${upstreamPort} HTTP/1.1\r\n\r\n`);
    expect(status(raw)).toBe(403);
    expect(bodyOf(raw)).toContain(`resolves to ${address}, a ${kind} address`);
    expect(upstreamConnections).toBe(before);
  });

  it('refuses when any one of several addresses is private', async () => {
    names['mixed.test'] = ['93.184.216.34', '10.0.0.1'];
    const gate = await startGate({ allowedHosts: ['mixed.test'], allowPrivate: [] });
    const raw = await exchange(gate.path, 'GET http://mixed.test/ HTTP/1.1\r\n\r\n');
    expect(status(raw)).toBe(403);
    expect(bodyOf(raw)).toContain('10.0.0.1');
  });

  it('refuses an allowed private IP literal without asking the resolver', async () => {
    const gate = await startGate({ allowedHosts: [`127.0.0.1:${upstreamPort}`], allowPrivate: [] });
    const raw = await exchange(gate.path, `CONNECT 127.0.0.1:${upstreamPort} HTTP/1.1\r\n\r\n`);
    expect(status(raw)).toBe(403);
    expect(gate.resolve).not.toHaveBeenCalled();
  });

  it.each([
    ['the host name', ['api.test']],
    ['a wildcard name', ['*.test']],
    ['the address', ['127.0.0.1']],
    ['an IPv4 CIDR', ['127.0.0.0/8']],
  ])('lets allowPrivate admit it by %s', async (_, allowPrivate) => {
    const gate = await startGate({ allowPrivate });
    const { established, inner } = await tunnelGet(gate.path);
    expect(established).toBe('HTTP/1.1 200 Connection Established');
    expect(JSON.parse(inner)).toMatchObject({ url: '/through-tunnel' });
  });

  it('lets an allowPrivate address cover its IPv4-mapped form', async () => {
    names['mapped.test'] = ['::ffff:127.0.0.1'];
    const gate = await startGate({
      allowedHosts: [`mapped.test:${upstreamPort}`],
      allowPrivate: ['127.0.0.1'],
    });
    const raw = await exchange(
      gate.path,
      `GET http://mapped.test:${upstreamPort}/m HTTP/1.1\r\n\r\n`,
    );
    expect(status(raw)).toBe(200);
    expect(JSON.parse(bodyOf(raw))).toMatchObject({ url: '/m' });
  });

  it.each([
    ['a CIDR that does not contain the address', ['10.0.0.0/8']],
    ['another name', ['other.test']],
    ['an IPv6 CIDR', ['fc00::/7']],
  ])('keeps refusing with allowPrivate naming %s', async (_, allowPrivate) => {
    const gate = await startGate({ allowPrivate });
    expect(status((await tunnelGet(gate.path)).raw)).toBe(403);
  });

  it('does not let allowPrivate stand in for allowed_hosts', async () => {
    const gate = await startGate({ allowedHosts: ['other.test'], allowPrivate: ['api.test'] });
    const raw = await exchange(gate.path, `CONNECT api.test:${upstreamPort} HTTP/1.1\r\n\r\n`);
    expect(status(raw)).toBe(403);
    expect(bodyOf(raw)).toContain('not in egress.allowed_hosts');
  });
});

describe('egress gate: bad input and failures', () => {
  it.each([
    ['garbage', 'garbage\r\n\r\n'],
    ['origin-form GET', 'GET / HTTP/1.1\r\nHost: api.test\r\n\r\n'],
    ['CONNECT without a port', 'CONNECT api.test HTTP/1.1\r\n\r\n'],
    ['port 0', 'CONNECT api.test:0 HTTP/1.1\r\n\r\n'],
    ['port 65536', 'CONNECT api.test:65536 HTTP/1.1\r\n\r\n'],
    ['a junk port', 'CONNECT api.test:80x HTTP/1.1\r\n\r\n'],
    ['a junk host', 'CONNECT api.te$t:443 HTTP/1.1\r\n\r\n'],
    ['an https absolute URI', 'GET https://api.test/ HTTP/1.1\r\n\r\n'],
    ['userinfo in the URI', 'GET http://u@api.test/ HTTP/1.1\r\n\r\n'],
    ['HTTP/2.0', 'GET http://api.test/ HTTP/2.0\r\n\r\n'],
    ['a header without a colon', 'GET http://api.test/ HTTP/1.1\r\nNoColon\r\n\r\n'],
    ['a folded header', 'GET http://api.test/ HTTP/1.1\r\nX-A: 1\r\n  folded\r\n\r\n'],
    ['a control byte in the target', 'GET http://api.test/\x01 HTTP/1.1\r\n\r\n'],
    ['a bad bracketed address', 'CONNECT [1:2]:443 HTTP/1.1\r\n\r\n'],
    ['an oversized head', `GET http://api.test/ HTTP/1.1\r\nX-Big: ${'a'.repeat(17_000)}\r\n\r\n`],
    ['an endless head', `GET http://api.test/ HTTP/1.1\r\nX-Big: ${'a'.repeat(40_000)}`],
  ])('answers %s with 400 and keeps serving', async (_, request) => {
    const gate = await startGate();
    const raw = await exchange(gate.path, request);
    expect(status(raw)).toBe(400);
    expect(gate.resolve).not.toHaveBeenCalled();
    const { established } = await tunnelGet(gate.path);
    expect(established).toBe('HTTP/1.1 200 Connection Established');
  });

  it('survives clients that vanish mid-head or mid-lookup, and leaks no upstream for them', async () => {
    let release: (addresses: string[]) => void = () => undefined;
    const slow = new Promise<string[]>((r) => (release = r));
    let lookingUp: () => void = () => undefined;
    const lookup = new Promise<void>((r) => (lookingUp = r));
    const gate = await startGate({
      allowedHosts: [`api.test:${upstreamPort}`, `slow.test:${upstreamPort}`],
      resolve: async (host) => {
        if (host !== 'slow.test') return ['127.0.0.1'];
        lookingUp();
        return slow;
      },
    });
    const half = dial(gate.path);
    half.write('CONNECT api.te');
    half.destroy();
    const waiting = dial(gate.path);
    waiting.write(`CONNECT slow.test:${upstreamPort} HTTP/1.1\r\n\r\n`);
    // The client leaves while the gate is looking its host up.
    await lookup;
    waiting.destroy();
    release(['127.0.0.1']);
    // A paused socket cannot see its peer leave, so the gate may dial; the tunnel must then unwind.
    await vi.waitFor(async () => expect(await openUpstreamConnections()).toBe(0), {
      timeout: 3_000,
    });
    const { established } = await tunnelGet(gate.path);
    expect(established).toBe('HTTP/1.1 200 Connection Established');
  });

  it('answers 502 when the upstream refuses the connection', async () => {
    const closed = net.createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const deadPort = (closed.address() as net.AddressInfo).port;
    await new Promise((r) => closed.close(r));
    const gate = await startGate({ allowedHosts: [`api.test:${deadPort}`] });
    const raw = await exchange(gate.path, `CONNECT api.test:${deadPort} HTTP/1.1\r\n\r\n`);
    expect(status(raw)).toBe(502);
    expect(bodyOf(raw)).toContain(`api.test:${deadPort}`);
    expect(gate.logs.map((l) => l.msg)).toContain('egress failed');
  });

  it('answers 502 when the name does not resolve', async () => {
    const gate = await startGate({ allowedHosts: ['nowhere.test'] });
    const raw = await exchange(gate.path, 'GET http://nowhere.test/ HTTP/1.1\r\n\r\n');
    expect(status(raw)).toBe(502);
    expect(bodyOf(raw)).toContain('ENOTFOUND');
  });

  it('answers 502 instead of hanging when the resolver never answers', async () => {
    const gate = await startGate({
      resolve: () => new Promise(() => undefined),
      connectTimeoutMs: 200,
    });
    const started = Date.now();
    const raw = await exchange(gate.path, `CONNECT api.test:${upstreamPort} HTTP/1.1\r\n\r\n`);
    expect(status(raw)).toBe(502);
    expect(bodyOf(raw)).toContain('timed out');
    expect(Date.now() - started).toBeLessThan(5_000);
  });
});
