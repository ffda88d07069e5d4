import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { get as httpGet, type Server } from 'node:http';
import type net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { appEnv } from '../../src/agent/app-env.js';
import { LogRing } from '../../src/agent/log-ring.js';
import { createStaticServer } from '../../src/agent/static-server.js';
import { appExit } from '../../src/runtime/local/exit-report.js';

describe('app env', () => {
  it('keeps the items, forces PORT and the proxy, and drops agent variables and bad names', () => {
    const env = appEnv([
      { name: 'GREETING', value: 'hi' },
      { name: 'PORT', value: '1' },
      { name: 'HTTPS_PROXY', value: 'http://evil' },
      { name: 'SLIPWAY_TOKEN', value: 'x' },
      { name: 'A=B', value: 'x' },
      { name: 'NUL', value: 'a\0b' },
    ]);
    expect(env).toMatchObject({
      GREETING: 'hi',
      PORT: '8080',
      HTTP_PROXY: 'http://127.0.0.1:3128',
      HTTPS_PROXY: 'http://127.0.0.1:3128',
      http_proxy: 'http://127.0.0.1:3128',
      https_proxy: 'http://127.0.0.1:3128',
      NO_PROXY: 'localhost,127.0.0.1',
    });
    expect(Object.keys(env)).not.toContain('SLIPWAY_TOKEN');
    expect(Object.keys(env)).not.toContain('A=B');
    expect(Object.keys(env)).not.toContain('NUL');
  });
});

describe('log ring', () => {
  it('splits lines per stream, timestamps them and keeps the last 1,000', () => {
    const ring = new LogRing();
    ring.write('stdout', 'a\nb');
    ring.write('stderr', 'err\n');
    ring.write('stdout', 'c\n');
    expect(ring.last(10).map((l) => `${l.stream}:${l.text}`)).toEqual([
      'stdout:a',
      'stderr:err',
      'stdout:bc',
    ]);
    for (let i = 0; i < 1_500; i += 1) ring.write('stdout', `${i}\n`);
    expect(ring.last(5_000)).toHaveLength(1_000);
    expect(ring.last(1)[0]?.text).toBe('1499');
    expect(ring.last(1)[0]?.time).toMatch(/Z$/);
  });
});

describe('exit report', () => {
  it("prefers the agent's report, else reads bwrap's 128 + n as a signal", () => {
    const agent = { code: 3, signal: null, lastLines: ['agent line'] };
    expect(appExit(agent, { code: 3, signal: null }, ['host line'])).toEqual({
      code: 3,
      signal: null,
      lastLines: ['host line'],
    });
    expect(appExit(agent, { code: 3, signal: null }, [])).toMatchObject({
      lastLines: ['agent line'],
    });
    expect(appExit(undefined, { code: 137, signal: null }, [])).toEqual({
      code: null,
      signal: 'SIGKILL',
      lastLines: [],
    });
    expect(appExit(undefined, { code: 2, signal: null }, [])).toEqual({
      code: 2,
      signal: null,
      lastLines: [],
    });
  });
});

describe('static server', () => {
  let dir: string;
  let server: Server;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'slipway-static-'));
    mkdirSync(join(dir, 'site', 'docs'), { recursive: true });
    writeFileSync(join(dir, 'site', 'home.html'), '<p>home</p>');
    writeFileSync(join(dir, 'site', 'docs', 'index.html'), '<p>docs</p>');
    writeFileSync(join(dir, 'site', 'app.wasm'), 'wasm');
    writeFileSync(join(dir, 'outside.txt'), 'secret');
    symlinkSync('../outside.txt', join(dir, 'site', 'leak.txt'));
    server = createStaticServer(join(dir, 'site'), 'home.html');
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  });

  afterAll(() => {
    server.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** node:http sends the path as written; fetch would normalise the `..` away first. */
  const get = (path: string) =>
    new Promise<{ status: number; type: string | undefined; body: string }>((resolve, reject) => {
      const port = (server.address() as net.AddressInfo).port;
      httpGet({ host: '127.0.0.1', port, path }, (res) => {
        let body = '';
        res.on('data', (chunk: Buffer) => (body += chunk.toString()));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, type: res.headers['content-type'], body }),
        );
      }).on('error', reject);
    });

  it('serves the index, directory indexes and content types', async () => {
    expect(await get('/')).toEqual({
      status: 200,
      type: 'text/html; charset=utf-8',
      body: '<p>home</p>',
    });
    expect((await get('/docs')).status).toBe(301);
    expect((await get('/docs/')).body).toBe('<p>docs</p>');
    expect((await get('/app.wasm')).type).toBe('application/wasm');
  });

  it('never serves outside its root, however the path is spelled', async () => {
    expect((await get('/leak.txt')).status).toBe(404);
    expect((await get('/%2e%2e/outside.txt')).status).toBe(400);
    expect((await get('/docs/..%2f..%2foutside.txt')).status).toBe(400);
    expect((await get('/home.html/x')).status).toBe(404);
    expect((await get('/%00')).status).toBe(400);
  });
});
