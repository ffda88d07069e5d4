/**
 * Issue #25 item 8: during an install the egress gate let a build step send `PUT /left-pad` and a
 * user-creation request to the package index. An index reached only because an install runs may
 * now only be read: GET and HEAD without a body, one request per connection; an http index gets
 * no CONNECT tunnel (whose requests the gate could not read). npm still installs from it.
 */
import { createHash } from 'node:crypto';
import http from 'node:http';
import type net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readHostEnv } from '../../src/runtime/local/host-env.js';
import { readPackageHosts } from '../../src/runtime/local/package-hosts.js';
import { deploy, report, startRuntime, type TestRuntime } from '../runtime/support.js';
import { tarGz } from '../support/tarball.js';

const INSTALL = 120_000;
let t: TestRuntime;
let index: http.Server;
let indexPort: number;
/** Every request the index received: `METHOD path`. */
const received: string[] = [];

beforeAll(async () => {
  const tarball = await tarGz({
    'package/package.json': JSON.stringify({ name: 'left-pad', version: '1.0.0', main: 'i.js' }),
    'package/i.js': "module.exports = (s, n) => String(s).padStart(n, ' ');",
  });
  index = http.createServer((req, res) => {
    received.push(`${req.method} ${req.url}`);
    req.resume();
    const base = `http://127.0.0.1:${indexPort}`;
    if (req.method === 'GET' && req.url === '/left-pad') {
      const dist = {
        tarball: `${base}/left-pad/-/left-pad-1.0.0.tgz`,
        shasum: createHash('sha1').update(tarball).digest('hex'),
        integrity: `sha512-${createHash('sha512').update(tarball).digest('base64')}`,
      };
      const packument = {
        name: 'left-pad',
        'dist-tags': { latest: '1.0.0' },
        versions: { '1.0.0': { name: 'left-pad', version: '1.0.0', main: 'i.js', dist } },
      };
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(packument));
    } else if (req.method === 'GET' && req.url === '/left-pad/-/left-pad-1.0.0.tgz') {
      res.writeHead(200, { 'content-type': 'application/octet-stream' }).end(tarball);
    } else {
      res.writeHead(req.method === 'GET' ? 404 : 201).end('{}');
    }
  });
  await new Promise<void>((r) => index.listen(0, '127.0.0.1', r));
  indexPort = (index.address() as net.AddressInfo).port;
  const env = readHostEnv();
  const real = await readPackageHosts(env.node, env.python, env.extraReadOnly);
  const cli = real.npm?.cli;
  if (!cli) throw new Error(`no npm for the general lane: ${real.missing.npm}`);
  t = await startRuntime({
    poolSize: 1,
    installTimeoutMs: INSTALL,
    packageHosts: {
      npm: { cli, registry: `http://127.0.0.1:${indexPort}/`, scoped: {} },
      missing: { pip: 'not needed here' },
    },
  });
}, INSTALL);

afterAll(async () => {
  await t?.close();
  index?.close();
});

/**
 * Run as the build step, after npm installed: writes through the egress proxy what a hostile
 * build would, each on its own connection, and keeps the first line of each answer.
 */
const PROBE = `
const fs = require('node:fs');
const net = require('node:net');
const target = 'http://127.0.0.1:' + process.env.INDEX;
const send = (raw) => new Promise((resolve) => {
  const s = net.connect(3128, '127.0.0.1');
  let got = '';
  s.on('data', (c) => { got += c; });
  s.on('close', () => resolve(got.split('\\r\\n')[0] + ' | ' + (got.match(/HTTP\\/1\\.1 \\d+/g) || []).length));
  s.on('error', (e) => resolve('error: ' + e.message));
  s.write(raw);
});
const body = '{"name":"left-pad","versions":{}}';
const probes = {
  put: 'PUT ' + target + '/left-pad HTTP/1.1\\r\\nContent-Type: application/json\\r\\nContent-Length: ' + body.length + '\\r\\n\\r\\n' + body,
  adduser: 'PUT ' + target + '/-/user/org.couchdb.user:mallory HTTP/1.1\\r\\nContent-Length: 2\\r\\n\\r\\n{}',
  post: 'POST ' + target + '/-/npm/v1/security/audits HTTP/1.1\\r\\nContent-Length: 2\\r\\n\\r\\n{}',
  delete: 'DELETE ' + target + '/left-pad/-rev/1 HTTP/1.1\\r\\n\\r\\n',
  getWithBody: 'GET ' + target + '/left-pad HTTP/1.1\\r\\nContent-Length: 2\\r\\n\\r\\n{}',
  connect: 'CONNECT 127.0.0.1:' + process.env.INDEX + ' HTTP/1.1\\r\\n\\r\\n',
  pipelined: 'GET ' + target + '/left-pad HTTP/1.1\\r\\nHost: x\\r\\n\\r\\nPUT /left-pad HTTP/1.1\\r\\nHost: x\\r\\nContent-Length: 2\\r\\n\\r\\n{}',
};
(async () => {
  const out = {};
  for (const [name, raw] of Object.entries(probes)) out[name] = await send(raw);
  fs.writeFileSync('probe.json', JSON.stringify(out));
})();
`;

describe('general lane install: the package index may only be read', () => {
  it(
    'installs a package from an http index, and refuses writes, CONNECT and smuggled requests',
    async () => {
      const files = {
        'package.json': JSON.stringify({
          name: 'probe-index',
          version: '1.0.0',
          main: 'server.js',
          dependencies: { 'left-pad': '1.0.0' },
          scripts: { build: 'node probe.js' },
        }),
        'probe.js': PROBE,
        'server.js': `const pad = require('left-pad');
require('node:http').createServer((q, s) => s.end(JSON.stringify({ pad: pad('x', 3), probes: JSON.parse(require('node:fs').readFileSync('probe.json')) }))).listen(process.env.PORT);`,
      };
      const env = [{ name: 'INDEX', value: String(indexPort) }];
      const sandbox = await deploy(t, 'node', files, { lane: 'general', env });
      const seen = await report<{ pad: string; probes: Record<string, string> }>(sandbox);
      expect(seen.pad).toBe('  x');
      for (const name of ['put', 'adduser', 'post', 'delete', 'getWithBody', 'connect']) {
        expect(seen.probes[name], name).toMatch(/^HTTP\/1\.1 403 /);
      }
      // The GET went up and was answered; the PUT behind it on the same connection did not.
      expect(seen.probes.pipelined).toBe('HTTP/1.1 200 OK | 1');
      expect(received.filter((r) => !r.startsWith('GET '))).toEqual([]);
      expect(received).toContain('GET /left-pad/-/left-pad-1.0.0.tgz');
      await t.runtime.reap(sandbox);
    },
    INSTALL,
  );
});
