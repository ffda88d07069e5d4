/**
 * The general lane's install widens egress to the package registry. It must widen it to the
 * registry's own port only: any other service on the registry's host (ssh, an admin port, a
 * database) stays out of reach, also for the app's own build script, which runs during the install.
 */
import http from 'node:http';
import type net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readHostEnv } from '../../src/runtime/local/host-env.js';
import { indexHosts, readPackageHosts } from '../../src/runtime/local/package-hosts.js';
import { deploy, report, startRuntime, type TestRuntime } from '../runtime/support.js';

const INSTALL = 120_000;
let t: TestRuntime;
let registry: http.Server;
let registryPort: number;
let other: http.Server;
let otherPort: number;

async function listen(server: http.Server): Promise<number> {
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return (server.address() as net.AddressInfo).port;
}

beforeAll(async () => {
  // The registry has nothing: the app installs no packages, only its build script runs.
  registry = http.createServer((_, res) => res.writeHead(404).end());
  registryPort = await listen(registry);
  other = http.createServer((_, res) => res.end('another service on the registry host'));
  otherPort = await listen(other);
  const env = readHostEnv();
  const real = await readPackageHosts(env.node, env.python, env.extraReadOnly);
  const cli = real.npm?.cli;
  if (!cli) throw new Error(`no npm for the general lane: ${real.missing.npm}`);
  t = await startRuntime({
    poolSize: 1,
    installTimeoutMs: INSTALL,
    packageHosts: {
      npm: { cli, registry: `http://127.0.0.1:${registryPort}/`, scoped: {} },
      missing: { pip: 'not needed here' },
    },
  });
}, INSTALL);

afterAll(async () => {
  await t?.close();
  registry?.close();
  other?.close();
});

/** Asks the egress proxy to GET / from each port on the registry's host, during the build. */
const PROBE = `
const fs = require('node:fs');
const net = require('node:net');
const ask = (port) => new Promise((resolve) => {
  const s = net.connect(3128, '127.0.0.1');
  let got = '';
  s.on('data', (c) => { got += c; if (got.includes('\\r\\n')) { s.destroy(); resolve(got.split('\\r\\n')[0]); } });
  s.on('error', (e) => resolve('error: ' + e.message));
  s.write('GET http://127.0.0.1:' + port + '/ HTTP/1.1\\r\\n\\r\\n');
});
(async () => {
  const out = {};
  for (const port of JSON.parse(process.env.PORTS)) out[port] = await ask(port);
  fs.writeFileSync('probe.json', JSON.stringify(out));
})();
`;

describe('general lane install: egress to the registry', () => {
  it(
    "reaches the registry's port during the install, and no other port on its host",
    async () => {
      const files = {
        'package.json': JSON.stringify({
          name: 'probe-install',
          version: '1.0.0',
          main: 'server.js',
          scripts: { build: 'node probe.js' },
        }),
        'probe.js': PROBE,
        'server.js': `require('node:http').createServer((q, s) => s.end(require('node:fs').readFileSync('probe.json'))).listen(process.env.PORT);`,
      };
      const env = [{ name: 'PORTS', value: JSON.stringify([registryPort, otherPort]) }];
      const sandbox = await deploy(t, 'node', files, { lane: 'general', env });
      const seen = await report<Record<string, string>>(sandbox);
      // The registry has nothing, so its answer is a 404: but it is the registry's.
      expect(seen[registryPort]).toBe('HTTP/1.1 404 Not Found');
      expect(seen[otherPort]).toMatch(/^HTTP\/1\.1 403 /);
      await t.runtime.reap(sandbox);
    },
    INSTALL,
  );

  it.each([
    [{ index: 'https://registry.example.org/simple/' }, ['registry.example.org:443 tls']],
    [{ index: 'http://10.0.0.5/simple/' }, ['10.0.0.5:80']],
    [{ index: 'https://mirror.example:8443/simple/' }, ['mirror.example:8443 tls']],
    [{ index: 'http://[fd00::5]:3141/root/pypi/' }, ['[fd00::5]:3141']],
    [
      {
        cli: 'npm',
        registry: 'https://r.example/',
        scoped: { '@a:registry': 'http://r.example/' },
      },
      ['r.example:443 tls', 'r.example:80'],
    ],
  ])('scopes the install to the index URL port: %j', (config, expected) => {
    expect(indexHosts(config).map((i) => `${i.target}${i.tls ? ' tls' : ''}`)).toEqual(expected);
  });
});
