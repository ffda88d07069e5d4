/**
 * Egress attacks end to end: the real server, apps deployed through the API into real bwrap
 * sandboxes, each going out through its in-sandbox proxy (127.0.0.1:3128), the agent's relay and
 * the host's egress gate, as any app would.
 */
import { execFileSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import http from 'node:http';
import type net from 'node:net';
import { networkInterfaces } from 'node:os';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deploy, fetchApp } from '../support/deploy.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { tarGz } from '../support/tarball.js';

const ALICE = 'alice-key-0123456789abcdef';
const BOB = 'bob-key-0123456789abcdef';
let server: TestServer;
let hostService: http.Server;
let hostPort: number;

beforeAll(async () => {
  server = await startTestServer({
    auth: {
      apiKeys: [
        { key: ALICE, name: 'alice' },
        { key: BOB, name: 'bob' },
      ],
    },
    runtime: { poolSize: 1, egress: { allowPrivate: ['127.0.0.1'], headTimeout: '3s' } },
  });
  // A host service bound to every address, as many are: the app must not reach it by any of them.
  hostService = http.createServer((_, res) => res.end('host service'));
  await new Promise<void>((r) => hostService.listen(0, '::', r));
  hostPort = (hostService.address() as net.AddressInfo).port;
}, 60_000);

afterAll(async () => {
  hostService?.closeAllConnections();
  hostService?.close();
  await server?.stop();
});

async function deployOk(token: string, metadata: object, files: Record<string, string>) {
  const res = await deploy(server.baseURL, token, metadata, await tarGz(files));
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return String(res.body.url);
}

const hello = { 'index.html': '<p>still deploying</p>' };

/** Node app: GET /probe sends each request in TARGETS to its proxy and reports the replies. */
const PROBE_APP = {
  'package.json': JSON.stringify({ name: 'probe', main: 'server.js' }),
  'server.js': `
const net = require('node:net');
const ask = (request) => new Promise((resolve) => {
  const s = net.connect(3128, '127.0.0.1');
  let got = '';
  s.setTimeout(5000, () => { s.destroy(); resolve('timeout: ' + got); });
  s.on('data', (c) => (got += c));
  s.on('error', (e) => resolve('error: ' + e.message));
  s.on('close', () => resolve(got));
  s.write(request);
});
require('node:http').createServer(async (req, res) => {
  const out = {};
  for (const r of JSON.parse(process.env.TARGETS)) out[r] = await ask(r + ' HTTP/1.1\\r\\nConnection: close\\r\\n\\r\\n');
  res.end(JSON.stringify(out));
}).listen(process.env.PORT);
`,
};

describe("egress: this host's addresses, special ranges and ports", () => {
  it('refuses every interface address of the host, and ports the entry does not name', async () => {
    const own = Object.values(networkInterfaces())
      .flatMap((list) => list ?? [])
      .filter((i) => !i.internal && !i.address.startsWith('fe80:'))
      .map((i) => (i.family === 'IPv6' ? `[${i.address}]` : i.address));
    expect(own.length).toBeGreaterThan(0);
    const refused = [
      ...own.flatMap((a) => [`CONNECT ${a}:${hostPort}`, `GET http://${a}:${hostPort}/`]),
      // allowPrivate covers 127.0.0.1, but the entry names no port: 80 and 443 only.
      `CONNECT 127.0.0.1:${hostPort}`,
      `GET http://127.0.0.1:${hostPort}/`,
    ];
    const allowed = `GET http://localhost:${hostPort}/`;
    const url = await deployOk(
      ALICE,
      {
        name: 'probe-own',
        env: [{ name: 'TARGETS', value: JSON.stringify([...refused, allowed]) }],
        egress: {
          allowed_hosts: [
            ...own.map((a) => `${a}:${hostPort}`),
            '127.0.0.1',
            `localhost:${hostPort}`,
          ],
        },
      },
      PROBE_APP,
    );
    const seen = JSON.parse((await fetchApp(`${url}/probe`)).body) as Record<string, string>;
    for (const request of refused) {
      expect(seen[request], request).toMatch(/^HTTP\/1\.1 403 /);
      expect(seen[request], request).not.toContain('host service');
    }
    for (const a of own) {
      expect(seen[`CONNECT ${a}:${hostPort}`]).toMatch(
        /resolves to .+, (a .+|an address of this host)\n/,
      );
    }
    expect(seen[`CONNECT 127.0.0.1:${hostPort}`]).toContain(`port ${hostPort} is not allowed`);
    // Named with its port (and allowed private by the operator), the same service is reachable.
    expect(seen[allowed]).toMatch(/^HTTP\/1\.1 200 [^]*host service$/);
  }, 60_000);

  it('checks allowed_hosts syntax at deploy, naming the entry', async () => {
    const files = await tarGz(hello);
    for (const [bad, index] of [
      ['api.example.org:0', 1],
      ['api.example.org:65536', 1],
      ['api.example.org:', 1],
      ['api.example.org:80:81', 1],
      ['*:443', 1],
      ['[::1]8080', 1],
      ['[1.2.3.4]:80', 1],
      ['[::1]:', 1],
    ] as const) {
      const metadata = { name: 'syntax', egress: { allowed_hosts: ['ok.example.org', bad] } };
      const res = await deploy(server.baseURL, ALICE, metadata, files);
      expect(res.status, bad).toBe(400);
      expect(res.body, bad).toMatchObject({
        code: 'bad_metadata',
        details: { field: `egress.allowed_hosts[${index}]` },
      });
    }
    const good = ['api.example.org:8443', '*.example.org:8443', '[::1]:8080', '::1', '[::1]'];
    const metadata = { name: 'syntax-ok', egress: { allowed_hosts: good } };
    const res = await deploy(server.baseURL, ALICE, metadata, files);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
  });
});

/** Node app: GET /flood?n=N keeps up to `live` proxy connections open, trickling a byte each. */
const FLOOD_APP = {
  'package.json': JSON.stringify({ name: 'flood', main: 'server.js' }),
  'server.js': `
const net = require('node:net');
const s = { started: 0, open: 0, closed: 0, timedOut: 0, errors: 0, target: 0 };
let live = 0;
function more() {
  while (s.open < live && s.started < s.target) one();
}
function one() {
  s.started++; s.open++;
  const c = net.connect(3128, '127.0.0.1');
  let timer, got = '';
  c.on('connect', () => { c.write('G'); timer = setInterval(() => c.write('x'), 500); });
  c.on('data', (d) => (got += d));
  c.on('error', () => s.errors++);
  c.on('close', () => {
    clearInterval(timer); s.open--; s.closed++;
    if (got.startsWith('HTTP/1.1 408')) s.timedOut++;
    setImmediate(more);
  });
}
require('node:http').createServer((req, res) => {
  const url = new URL(req.url, 'http://app');
  if (url.pathname === '/flood') {
    s.target += Number(url.searchParams.get('n'));
    live = Number(url.searchParams.get('live'));
    more();
  }
  res.end(JSON.stringify(s));
}).listen(process.env.PORT);
`,
};

const fds = () => readdirSync('/proc/self/fd').length;

describe('egress: file descriptors', () => {
  it('10,000 trickling egress connections from one app leave the control plane able to deploy for another user', async () => {
    const url = await deployOk(ALICE, { name: 'flood', egress: { allowed_hosts: [] } }, FLOOD_APP);
    const before = fds();
    // Far fewer fds than the flood needs, were the gate to hold every connection (as it did).
    const limit = before + 1_500;
    const pid = String(process.pid);
    const soft = execFileSync('prlimit', [
      '--pid',
      pid,
      '--nofile',
      '--output=SOFT',
      '--noheadings',
    ])
      .toString()
      .trim();
    execFileSync('prlimit', ['--pid', pid, `--nofile=${limit}:`]);
    let peak = before;
    let exhausted = '';
    const sampler = setInterval(() => {
      try {
        peak = Math.max(peak, fds());
      } catch (err) {
        // EMFILE here is the failure under test: the control plane ran out of descriptors.
        exhausted = String(err);
      }
    }, 20);
    try {
      await fetchApp(`${url}/flood?n=10000&live=3000`);
      type State = { started: number; open: number; closed: number; timedOut: number };
      const state = async () => JSON.parse((await fetchApp(url)).body) as State;
      // While the flood goes on, another user deploys and the new app answers.
      const bobUrl = await deployOk(BOB, { name: 'bob-app' }, hello);
      expect((await fetchApp(bobUrl)).body).toContain('still deploying');
      let now = await state();
      // Generous: 3,000 connects at once overflow the agent's listen backlog, and a dropped SYN
      // is sent again after 1, 3, 7, 15, 31 s; on a loaded host the last ones connect late.
      const deadline = Date.now() + 90_000;
      while (!(now.started === 10_000 && now.open === 0) && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 250));
        now = await state();
      }
      // All 10,000 were made, and none is still held: the last ones were cut at the deadline.
      expect(now).toMatchObject({ started: 10_000, open: 0, closed: 10_000 });
      expect(now.timedOut).toBeGreaterThan(0);
      expect(now.timedOut).toBeLessThanOrEqual(256 * 10);
      // The door held at most its cap (256); the rest is the two deploys' own fds.
      expect(exhausted).toBe('');
      expect(peak - before).toBeLessThan(256 + 200);
    } finally {
      clearInterval(sampler);
      execFileSync('prlimit', ['--pid', pid, `--nofile=${soft}:`]);
    }
  }, 180_000);
});
