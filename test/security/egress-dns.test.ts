/**
 * Egress name resolution must not wait behind libuv's thread pool: scrypt hashing for share links
 * (or zlib, or fs) once filled it and every app's egress stalled behind getaddrinfo. The pool is
 * saturated for real here (pbkdf2 jobs), and the gate must still answer at once, from /etc/hosts
 * and from DNS (a real UDP name server on loopback, asked through c-ares).
 */
import { pbkdf2 } from 'node:crypto';
import dgram from 'node:dgram';
import { mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEgressResolver } from '../../src/runtime/egress/egress-dns.js';
import { createEgressGate } from '../../src/runtime/egress/egress-gate.js';
import { connectStatus } from '../support/general-lane-apps.js';

const dir = mkdtempSync(join(tmpdir(), 'slipway-dns-'));
let upstream: http.Server;
let upstreamPort: number;
let dns: dgram.Socket;
let dnsPort: number;
const dnsQueries: string[] = [];

beforeAll(async () => {
  upstream = http.createServer((_, res) => res.end('upstream'));
  await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
  upstreamPort = (upstream.address() as net.AddressInfo).port;
  dns = dgram.createSocket('udp4');
  dns.on('message', (msg, from) => {
    const reply = answer(msg, { 'api.test': '127.0.0.1' });
    if (reply) dns.send(reply, from.port, from.address);
  });
  await new Promise<void>((r) => dns.bind(0, '127.0.0.1', r));
  dnsPort = dns.address().port;
});

afterAll(async () => {
  dns.close();
  upstream.closeAllConnections();
  await new Promise((r) => upstream.close(r));
  rmSync(dir, { recursive: true, force: true });
});

/** A DNS answer with an A record for known names; no records (NODATA) for anything else. */
function answer(query: Buffer, zone: Record<string, string>): Buffer | undefined {
  const labels: string[] = [];
  let at = 12;
  while (at < query.length && query[at] !== 0) {
    const len = query[at] ?? 0;
    labels.push(query.subarray(at + 1, at + 1 + len).toString());
    at += len + 1;
  }
  const questionEnd = at + 5;
  const name = labels.join('.').toLowerCase();
  const type = query.readUInt16BE(at + 1);
  dnsQueries.push(`${name}/${type}`);
  const address = type === 1 ? zone[name] : undefined;
  const header = Buffer.alloc(12);
  header.writeUInt16BE(query.readUInt16BE(0), 0);
  header.writeUInt16BE(0x8180, 2);
  header.writeUInt16BE(1, 4);
  header.writeUInt16BE(address ? 1 : 0, 6);
  const question = query.subarray(12, questionEnd);
  if (!address) return Buffer.concat([header, question]);
  const record = Buffer.alloc(16);
  record.writeUInt16BE(0xc00c, 0);
  record.writeUInt16BE(1, 2);
  record.writeUInt16BE(1, 4);
  record.writeUInt32BE(60, 6);
  record.writeUInt16BE(4, 10);
  Buffer.from(address.split('.').map(Number)).copy(record, 12);
  return Buffer.concat([header, question, record]);
}

/** Fills the thread pool (4 threads) with CPU-bound jobs for a few seconds. */
function saturatePool(): { pending: () => number; done: Promise<void> } {
  let left = 8;
  let finish: () => void = () => undefined;
  const done = new Promise<void>((r) => (finish = r));
  for (let i = 0; i < 8; i++) {
    pbkdf2('password', 'salt', 1_000_000, 64, 'sha512', () => {
      left -= 1;
      if (left === 0) finish();
    });
  }
  return { pending: () => left, done };
}

async function listening(server: net.Server): Promise<string> {
  const path = join(dir, `g${Math.random().toString(36).slice(2)}.sock`);
  await new Promise<void>((r) => server.listen(path, r));
  return path;
}

describe('egress DNS off the thread pool', () => {
  it('resolves a name from /etc/hosts while the thread pool is saturated', async () => {
    // No resolve override: the gate's own default, as in production.
    const server = createEgressGate({
      allowedHosts: [`localhost:${upstreamPort}`],
      allowPrivate: ['localhost'],
    });
    const path = await listening(server);
    const pool = saturatePool();
    const started = performance.now();
    const status = await connectStatus(path, `localhost:${upstreamPort}`);
    const ms = performance.now() - started;
    // Answered while the pool was still busy: it did not wait behind the jobs.
    expect(pool.pending()).toBeGreaterThan(0);
    expect(status).toBe('HTTP/1.1 200 Connection Established');
    expect(ms).toBeLessThan(500);
    await pool.done;
    server.close();
  }, 60_000);

  it('resolves other names with c-ares, also while the thread pool is saturated', async () => {
    const resolve = createEgressResolver({ servers: [`127.0.0.1:${dnsPort}`] });
    const server = createEgressGate({
      allowedHosts: [`api.test:${upstreamPort}`],
      allowPrivate: ['127.0.0.1'],
      resolve,
    });
    const path = await listening(server);
    const pool = saturatePool();
    const started = performance.now();
    const status = await connectStatus(path, `api.test:${upstreamPort}`);
    expect(pool.pending()).toBeGreaterThan(0);
    expect(status).toBe('HTTP/1.1 200 Connection Established');
    expect(performance.now() - started).toBeLessThan(500);
    expect(dnsQueries).toEqual(expect.arrayContaining(['api.test/1', 'api.test/28']));
    await expect(resolve('nothing.test')).rejects.toMatchObject({ code: 'ENODATA' });
    await pool.done;
    server.close();
  }, 60_000);

  it('reads the hosts file again when it changes', async () => {
    const hostsFile = join(dir, 'hosts');
    writeFileSync(hostsFile, '# operator entries\n10.1.2.3 Internal.Example other\n');
    const resolve = createEgressResolver({ servers: [`127.0.0.1:${dnsPort}`], hostsFile });
    expect(await resolve('internal.example')).toEqual(['10.1.2.3']);
    writeFileSync(hostsFile, '10.9.9.9 internal.example\n::1 internal.example\n');
    const later = new Date(Date.now() + 5_000);
    utimesSync(hostsFile, later, later);
    expect(await resolve('internal.example')).toEqual(['10.9.9.9', '::1']);
    expect(await resolve('api.test')).toEqual(['127.0.0.1']);
  });
});
