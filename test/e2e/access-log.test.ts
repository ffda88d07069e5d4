/**
 * At debug, one `app request` line per request to an app, the same on either data path (the
 * native-front-door project runs this file again through HAProxy, whose direct requests reach
 * the log through its access ring): app, method, path without its query string, status, ms. No
 * query string and no Slipway credential ever reach the log.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { haproxyConfig, haproxyPaths } from '../../src/front/haproxy/haproxy-config.js';
import { deploy, fetchApp } from '../support/deploy.js';
import { testDataPath } from '../support/data-path.js';
import { freePort, startServerProcess, type ServerProcess } from '../support/server-process.js';
import { tarGz } from '../support/tarball.js';

const KEY = 'access-log-admin-key-0123456789abcdef';
const root = mkdtempSync(join(tmpdir(), 'slipway-access-log-'));
let server: ServerProcess;

beforeAll(async () => {
  server = await startServerProcess({
    dataDir: join(root, 'data'),
    port: await freePort(),
    config: { server: { logLevel: 'debug' }, runtime: { poolSize: 1 } },
    env: { SVC_AUTH_API_KEY: KEY },
    readyTimeoutMs: 120_000,
  });
}, 150_000);

afterAll(async () => {
  await server?.stop('SIGTERM');
  rmSync(root, { recursive: true, force: true });
});

interface AccessLine {
  app?: string;
  method?: string;
  path?: string;
  status?: number;
  ms?: number;
}

/** The `app request` lines of the server's log so far. */
function accessLines(): AccessLine[] {
  const lines: AccessLine[] = [];
  for (const text of server.output()) {
    if (!text.includes('"app request"')) continue;
    lines.push(JSON.parse(text) as AccessLine);
  }
  return lines;
}

/** Resolves once `check` holds of the log, tested again at each line the server writes. */
function untilLogged(check: () => boolean, what: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const stdout = server.child.stdout;
    const timer = setTimeout(() => {
      stdout?.off('data', test);
      reject(new Error(`not logged within 20 s: ${what}`));
    }, 20_000);
    const test = (): void => {
      if (!check()) return;
      clearTimeout(timer);
      stdout?.off('data', test);
      resolve();
    };
    stdout?.on('data', test);
    test();
  });
}

describe(`access lines at debug (${testDataPath()} path)`, () => {
  it('logs each request to an app: app, method, path without its query, status, ms', async () => {
    const source = await tarGz({
      'package.json': JSON.stringify({ name: 'logged', main: 'server.js' }),
      'server.js': `require('node:http').createServer((req, res) => {
  res.statusCode = req.url.startsWith('/missing') ? 404 : 200;
  res.end('ok');
}).listen(process.env.PORT);`,
    });
    const res = await deploy(server.baseURL, KEY, { name: 'logged' }, source);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const url = String(res.body.url);
    for (let i = 0; i < 3; i += 1) {
      expect((await fetchApp(`${url}/page-${i}?token=query-secret-${i}`)).status).toBe(200);
    }
    expect((await fetchApp(`${url}/missing?token=query-secret-x`, { method: 'POST' })).status).toBe(
      404,
    );

    const wanted = ['/page-0', '/page-1', '/page-2', '/missing'];
    await untilLogged(
      () => wanted.every((path) => accessLines().some((line) => line.path === path)),
      `a line for each of ${wanted.join(', ')}`,
    );
    for (const path of wanted) {
      const line = accessLines().find((l) => l.path === path);
      expect(line).toMatchObject({
        app: 'logged',
        method: path === '/missing' ? 'POST' : 'GET',
        status: path === '/missing' ? 404 : 200,
      });
      expect(typeof line?.ms).toBe('number');
    }
    const log = server.output().join('\n');
    expect(log).not.toContain('query-secret');
    expect(log).not.toContain(KEY);
  });
});

describe('the native front door at other levels', () => {
  it('writes no access line at all below debug, and bounds the ring it writes at debug', () => {
    const paths = haproxyPaths('/front');
    const settings = {
      host: '127.0.0.1',
      port: 8080,
      slots: 2,
      threads: 1,
      headersTimeoutMs: 10_000,
    };
    const quiet = haproxyConfig({ ...settings, node: '/usr/bin/node' }, paths);
    expect(quiet).not.toMatch(/^ring /m);
    expect(quiet).not.toMatch(/^\s+log /m);
    const debug = haproxyConfig({ ...settings, node: '/usr/bin/node', accessLog: true }, paths);
    expect(debug).toMatch(/^ring access\n {2}format raw\n {2}maxlen 2048\n {2}size 1048576$/m);
    expect(debug).toContain('  log ring@access local0');
    expect(debug).toContain('  http-request set-log-level silent if !direct');
  });
});
