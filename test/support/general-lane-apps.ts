/**
 * Sources for the general-lane tests (runtime and e2e): node apps whose dependencies are not
 * vendored, so they only run once the sandbox has installed them from the host's own registry.
 * Nothing here names a registry: the host's npm config does, and the tests ask it.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { TarEntries } from './tarball.js';

const run = promisify(execFile);

/** A package small enough to install in a second, pinned so its behaviour is known. */
export const DEP = { name: 'is-number', version: '7.0.0' };
/** A name no registry has: its install must fail with npm's E404. */
export const MISSING_DEP = 'slipway-no-such-package-zzzz';

/** The registry URL the host's npm uses (what the runtime reads too). */
export async function hostRegistry(): Promise<string> {
  return (await run('npm', ['config', 'get', 'registry'])).stdout.trim();
}

/**
 * Fails loudly when the host's registry cannot serve the test package: these tests prove a real
 * install, and a skipped test would hide that this machine cannot do one.
 */
export async function assertRegistryReachable(): Promise<void> {
  const registry = await hostRegistry();
  try {
    await run('npm', ['view', `${DEP.name}@${DEP.version}`, 'version'], { timeout: 30_000 });
  } catch (err) {
    throw new Error(
      `the host's npm registry ${registry} does not serve ${DEP.name}@${DEP.version} from this ` +
        `machine, so the general lane cannot be tested here: ${String(err)}`,
    );
  }
}

/** package-lock.json for `pkg`, made by the host's npm without installing anything. */
export async function lockfileFor(pkg: object): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), 'slipway-lock-'));
  try {
    writeFileSync(join(dir, 'package.json'), JSON.stringify(pkg));
    await run('npm', ['install', '--package-lock-only', '--no-audit', '--no-fund'], { cwd: dir });
    return readFileSync(join(dir, 'package-lock.json'), 'utf8');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const SERVER = `
const isNumber = require('is-number');
require('node:http')
  .createServer((req, res) => res.end('is-number says ' + isNumber(5) + ' for 5 and ' + isNumber('x') + ' for x'))
  .listen(process.env.PORT);
`;
export const SERVER_BODY = 'is-number says true for 5 and false for x';

/** A node app needing DEP at run time; with a lockfile (`npm ci`) unless `lock` is false. */
export async function depApp(opts: { lock?: boolean } = {}): Promise<TarEntries> {
  const pkg = {
    name: 'dep-app',
    version: '1.0.0',
    main: 'server.js',
    dependencies: { [DEP.name]: DEP.version },
  };
  return {
    'package.json': JSON.stringify(pkg),
    ...(opts.lock === false ? {} : { 'package-lock.json': await lockfileFor(pkg) }),
    'server.js': SERVER,
  };
}

/**
 * A lockfile naming a package no registry has: `npm ci` trusts the lock and fails fetching it.
 * Written by hand because npm cannot lock what does not exist.
 */
export function missingDepApp(): TarEntries {
  const pkg = {
    name: 'missing-dep',
    version: '1.0.0',
    main: 'server.js',
    dependencies: { [MISSING_DEP]: '1.0.0' },
  };
  const lock = {
    name: pkg.name,
    version: pkg.version,
    lockfileVersion: 3,
    requires: true,
    packages: {
      '': { name: pkg.name, version: pkg.version, dependencies: pkg.dependencies },
      [`node_modules/${MISSING_DEP}`]: { version: '1.0.0' },
    },
  };
  return {
    'package.json': JSON.stringify(pkg),
    'package-lock.json': JSON.stringify(lock),
    'server.js':
      "require('node:http').createServer((q, s) => s.end('unreachable')).listen(process.env.PORT);",
  };
}

/**
 * A node app with a build step whose tool is a devDependency: the build writes dist/answer.txt
 * using it, and the server serves the file (and says whether the dev dependency stayed).
 */
export async function buildApp(): Promise<TarEntries> {
  const pkg = {
    name: 'build-app',
    version: '1.0.0',
    main: 'server.js',
    scripts: { build: 'node build.js' },
    devDependencies: { [DEP.name]: DEP.version },
  };
  return {
    'package.json': JSON.stringify(pkg),
    'package-lock.json': await lockfileFor(pkg),
    'build.js': `
const fs = require('node:fs');
fs.mkdirSync('dist', { recursive: true });
fs.writeFileSync('dist/answer.txt', 'built with is-number: ' + require('is-number')(42));
`,
    'server.js': `
const fs = require('node:fs');
require('node:http').createServer((req, res) => {
  const kept = fs.existsSync('node_modules/is-number/package.json');
  res.end(fs.readFileSync('dist/answer.txt', 'utf8') + '; dev dependency kept: ' + kept);
}).listen(process.env.PORT);
`,
  };
}

/**
 * Installs DEP, then at run time asks its egress proxy for a CONNECT to `REGISTRY_HOST:443` on
 * every GET /probe and answers with the proxy's status line: the install could reach the
 * registry, the app must not.
 */
export async function probeApp(): Promise<TarEntries> {
  const app = await depApp();
  return {
    ...app,
    'server.js': `
const net = require('node:net');
const http = require('node:http');
require('is-number');
http.createServer((req, res) => {
  const host = process.env.REGISTRY_HOST;
  const proxy = net.connect(3128, '127.0.0.1');
  let head = '';
  proxy.on('data', (chunk) => {
    head += chunk;
    if (!head.includes('\\r\\n')) return;
    proxy.destroy();
    res.end(head.split('\\r\\n')[0]);
  });
  proxy.on('error', (err) => res.end('proxy error: ' + err.message));
  proxy.write('CONNECT ' + host + ':443 HTTP/1.1\\r\\nHost: ' + host + ':443\\r\\n\\r\\n');
}).listen(process.env.PORT);
`,
  };
}

/** The first line a gate answers a CONNECT to `target` with. */
export function connectStatus(path: string, target: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(path);
    let got = '';
    socket.on('data', (c: Buffer) => {
      got += c.toString();
      if (!got.includes('\r\n')) return;
      socket.destroy();
      resolve(got.split('\r\n')[0] ?? '');
    });
    socket.on('error', reject);
    socket.write(`CONNECT ${target} HTTP/1.1\r\nHost: ${target}\r\n\r\n`);
  });
}
