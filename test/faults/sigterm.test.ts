import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { instanceId, runtimeRoot } from '../../src/runtime/local/runtime-dir.js';
import { deploy } from '../support/deploy.js';
import { freePort, startServerProcess, type ServerProcess } from '../support/server-process.js';
import { SseClient } from '../support/sse.js';
import { tarGz } from '../support/tarball.js';

const KEY = `sigterm-admin-${randomBytes(16).toString('hex')}`;
const SHUTTING_DOWN = { code: 'not_ready', message: 'the server is shutting down' };

const root = mkdtempSync(join(tmpdir(), 'slipway-sigterm-'));
const running: ServerProcess[] = [];

afterAll(async () => {
  for (const server of running) await server.stop('SIGKILL');
  rmSync(root, { recursive: true, force: true });
});

async function start(
  dataDir: string,
  port: number,
  config: Record<string, unknown> = {},
  noWait = false,
): Promise<ServerProcess> {
  const server = await startServerProcess({
    dataDir,
    port,
    config,
    env: { SVC_AUTH_API_KEY: KEY },
    readyTimeoutMs: 90_000,
    noWait,
  });
  running.push(server);
  return server;
}

/** A node app answering `<label>`; a slow one waits `delayMs` before it listens. */
function app(label: string, delayMs = 0): Promise<Buffer> {
  return tarGz({
    'package.json': JSON.stringify({ name: 'sigterm-app', main: 'server.js' }),
    'server.js': `
const http = require('node:http');
console.log('booting ${label}');
setTimeout(() => {
  http.createServer((req, res) => res.end('${label}\\n')).listen(process.env.PORT);
}, ${delayMs});
`,
  });
}

/**
 * Waits for a line of the process's output, or fails once the process exited without it: how long
 * a start takes to print it depends on the host's load (30 s did not hold at a load of 20), so
 * only the test's own timeout bounds the wait.
 */
async function outputLine(server: ServerProcess, match: RegExp): Promise<string> {
  let exited = false;
  void server.exited.then(() => (exited = true));
  for (;;) {
    const line = server.output().find((l) => match.test(l));
    if (line !== undefined) return line;
    if (exited) throw new Error(`exited without ${match}:\n${server.output().join('\n')}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** A deploy over one given keep-alive agent (fetch's pool cannot be pinned to a connection). */
async function deployOn(agent: Agent, base: string, name: string, source: Buffer): Promise<Answer> {
  const form = new FormData();
  form.set('metadata', JSON.stringify({ name }));
  form.set('source', new Blob([new Uint8Array(source)], { type: 'application/gzip' }), 's.tgz');
  const encoded = new Request('http://x/', { method: 'POST', body: form });
  const body = Buffer.from(await encoded.arrayBuffer());
  return send(agent, `${base}/v1/deploy`, 'POST', body, {
    'content-type': encoded.headers.get('content-type') ?? '',
  });
}

function send(
  agent: Agent,
  url: string,
  method: string,
  body?: Buffer,
  headers: Record<string, string> = {},
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      { agent, method, headers: { authorization: `Bearer ${KEY}`, ...headers } },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (text += chunk));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text }),
        );
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

async function get(
  server: ServerProcess,
  path: string,
): Promise<{ status: number; body: unknown }> {
  const res = await fetch(`${server.baseURL}${path}`, {
    headers: { authorization: `Bearer ${KEY}` },
  });
  return { status: res.status, body: await res.json() };
}

/** Pids whose command line names `needle`. */
function processesNaming(needle: string): number[] {
  return readdirSync('/proc').flatMap((pid) => {
    if (!/^\d+$/.test(pid)) return [];
    try {
      return readFileSync(`/proc/${pid}/cmdline`, 'latin1').includes(needle) ? [Number(pid)] : [];
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw err;
    }
  });
}

/** The instance's cgroup dirs, one per hierarchy, wherever the host nests them. */
function instanceCgroups(dataDir: string): string[] {
  const id = instanceId(dataDir);
  const found: string[] = [];
  const walk = (dir: string, depth: number): void => {
    if (depth > 6) return;
    let entries: string[];
    try {
      entries = readdirSync(dir);
    } catch (err) {
      if (['ENOENT', 'ENOTDIR', 'EACCES'].includes((err as NodeJS.ErrnoException).code ?? '')) {
        return;
      }
      throw err;
    }
    if (entries.includes('slipway') && existsSync(join(dir, 'slipway', id))) {
      found.push(join(dir, 'slipway', id));
    }
    for (const name of entries) {
      if (name === 'slipway' || name.includes('.')) continue;
      walk(join(dir, name), depth + 1);
    }
  };
  walk('/sys/fs/cgroup', 0);
  return found;
}

describe('SIGTERM drains', () => {
  it('answers every deploy in flight, ends the streams, refuses what comes after, exits 0', async () => {
    const dataDir = join(root, 'drain');
    const port = await freePort();
    const config = { server: { shutdownTimeout: '20s' } };
    const first = await start(dataDir, port, config);

    // The app whose logs five clients follow, and one lifecycle event stream.
    const followed = await deploy(first.baseURL, KEY, { name: 'followed' }, await app('followed'));
    expect(followed.status, JSON.stringify(followed.body)).toBe(200);
    const streams = await Promise.all(
      Array.from({ length: 5 }, () =>
        SseClient.open(`${first.baseURL}/v1/apps/followed/logs?follow=true`, KEY),
      ),
    );
    const events = await SseClient.open(`${first.baseURL}/api/events`, KEY);
    for (const stream of [...streams, events]) expect(stream.status).toBe(200);
    await events.waitFor((f) => f.comment === 'connected', 'the connected comment');

    // Twenty deploys of distinct apps, half of them slow to listen; the first one so slow that
    // the drain is sure to last past the requests the test sends after the signal.
    const names = Array.from({ length: 20 }, (_, i) => `drain-${i}`);
    const delayOf = (i: number): number =>
      i === 0 ? 4_000 : i % 2 === 0 ? 1_500 + (i % 4) * 250 : 0;
    const sources = await Promise.all(names.map((name, i) => app(name, delayOf(i))));
    let answered = 0;
    const outcomes = names.map((name, i) =>
      deploy(first.baseURL, KEY, { name }, sources[i]).then(
        (res) => {
          answered += 1;
          return { name, status: res.status, body: res.body, error: undefined as unknown };
        },
        (error: unknown) => ({ name, status: 0, body: {}, error }),
      ),
    );
    // Some answered: the rest are in flight (the slow ones wait for their apps).
    const deadline = Date.now() + 60_000;
    while (answered < 3 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    const inFlightAtSignal = names.length - answered;
    // Keep-alive connections, idle when the signal comes, to the API and to an app's host: their
    // next request must be told why, not reset.
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    expect((await send(agent, `${first.baseURL}/v1/apps`, 'GET')).status).toBe(200);
    const appHost = { host: new URL(String(followed.body.url)).host };
    const appAgent = new Agent({ keepAlive: true, maxSockets: 1 });
    const served = await send(appAgent, `${first.baseURL}/`, 'GET', undefined, appHost);
    expect(served.body).toBe('followed\n');
    const lateSource = await app('late');

    const signalled = Date.now();
    first.child.kill('SIGTERM');
    await outputLine(first, /SIGTERM: shutting down/);
    const [late, lateVisit] = await Promise.all([
      deployOn(agent, first.baseURL, 'late', lateSource),
      send(appAgent, `${first.baseURL}/`, 'GET', undefined, appHost),
    ]);
    const code = await first.exited;
    const exitMs = Date.now() - signalled;

    for (const refused of [late, lateVisit]) {
      expect(refused.status, refused.body).toBe(503);
      expect(JSON.parse(refused.body)).toEqual(SHUTTING_DOWN);
      expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
      expect(refused.headers.connection).toBe('close');
    }
    agent.destroy();
    appAgent.destroy();

    const results = await Promise.all(outcomes);
    // Every deploy got an HTTP answer: committed (2xx) or refused as shutting down (503).
    expect(
      results.filter((r) => r.error !== undefined).map((r) => `${r.name}: ${String(r.error)}`),
    ).toEqual([]);
    for (const r of results) {
      if (r.status === 503) expect(r.body).toEqual(SHUTTING_DOWN);
      else
        expect([200, 202], `${r.name}: ${r.status} ${JSON.stringify(r.body)}`).toContain(r.status);
    }
    // Every stream ended with an error frame saying why, and the server ended it.
    for (const stream of [...streams, events]) {
      const frame = await stream.waitFor((f) => f.event === 'error', 'the shutdown frame', 1_000);
      expect(JSON.parse(frame.data ?? '')).toEqual(SHUTTING_DOWN);
      await stream.ended;
      expect(stream.failure).toBeUndefined();
    }
    expect(code).toBe(0);
    expect(exitMs).toBeLessThan(20_000);
    expect(inFlightAtSignal).toBeGreaterThan(0);
    console.log(
      `drain: ${inFlightAtSignal} deploys in flight at SIGTERM, exit after ${exitMs} ms; answers ` +
        JSON.stringify(results.map((r) => r.status)),
    );

    // After a restart: what was answered 2xx is there with its version, what was refused is not.
    const second = await start(dataDir, port, config);
    for (const r of [...results, { name: 'late', status: 503 }]) {
      const view = await get(second, `/v1/apps/${r.name}/versions`);
      if (r.status === 503) {
        expect(view.status, r.name).toBe(404);
      } else {
        expect(view.status, r.name).toBe(200);
        const items = (view.body as { items: { version: number }[] }).items;
        expect(
          items.map((v) => v.version),
          r.name,
        ).toContain(1);
      }
    }
    expect(await second.stop('SIGTERM')).toBe(0);
  }, 240_000);

  it('cuts a request that cannot finish at server.shutdownTimeout and still exits 0', async () => {
    const dataDir = join(root, 'timeout');
    const port = await freePort();
    const server = await start(dataDir, port, { server: { shutdownTimeout: '3s' } });

    // An upload that never completes: the head is in, the body stops a third of the way.
    const socket = connect(port, '127.0.0.1');
    await new Promise<void>((resolve, reject) => {
      socket.once('connect', resolve);
      socket.once('error', reject);
    });
    const boundary = 'xstalled';
    socket.write(
      'POST /v1/deploy HTTP/1.1\r\n' +
        `host: 127.0.0.1:${port}\r\n` +
        `authorization: Bearer ${KEY}\r\n` +
        `content-type: multipart/form-data; boundary=${boundary}\r\n` +
        'content-length: 300000\r\n\r\n' +
        `--${boundary}\r\ncontent-disposition: form-data; name="source"; filename="s.tgz"\r\n` +
        `content-type: application/gzip\r\n\r\n${'x'.repeat(100_000)}`,
    );
    const cut = new Promise<string>((resolve) => {
      let text = '';
      socket.on('data', (chunk: Buffer) => (text += chunk.toString('latin1')));
      socket.on('error', () => undefined);
      socket.on('close', () => resolve(text));
    });
    await new Promise((r) => setTimeout(r, 500));

    const signalled = Date.now();
    const code = await server.stop('SIGTERM', 30_000);
    const exitMs = Date.now() - signalled;
    expect(code).toBe(0);
    expect(await cut).toBe('');
    // The drain waited for it (not cut at once) and ended at the timeout, with a warning.
    expect(exitMs).toBeGreaterThanOrEqual(3_000);
    expect(exitMs).toBeLessThan(3_000 + 5_000);
    const warning = server.output().find((l) => l.includes('still running when the drain ended'));
    expect(warning, server.output().join('\n')).toBeDefined();
    expect(JSON.parse(warning ?? '{}')).toMatchObject({ level: 40, requests: 1 });
    console.log(`drain timeout 3 s: exit after ${exitMs} ms`);
  }, 120_000);

  it('during start-up exits 0 promptly and leaves no sandbox, runtime dir or cgroup', async () => {
    const dataDir = join(root, 'startup');
    const port = await freePort();
    // An app to bring back at start, so that the start has sandboxes of its own to stop.
    const before = await start(dataDir, port);
    const res = await deploy(before.baseURL, KEY, { name: 'comeback' }, await app('comeback'));
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(await before.stop('SIGTERM')).toBe(0);

    for (const moment of [/Server listening/, /"msg":"general lane"/, /sandbox limits/]) {
      const server = await start(dataDir, port, {}, true);
      await outputLine(server, moment);
      const signalled = Date.now();
      const code = await server.stop('SIGTERM', 30_000);
      const exitMs = Date.now() - signalled;
      const output = server.output().join('\n');
      expect(code, output).toBe(0);
      expect(exitMs, output).toBeLessThan(10_000);
      expect(output).not.toMatch(
        /uncaught|unhandled|failed to start|shutdown failed|instance cgroup not removed/i,
      );
      // Nothing left: no process naming the runtime dir (bwrap, agents), no dir, no cgroup.
      const runtimeDir = runtimeRoot(dataDir, undefined);
      expect(processesNaming(runtimeDir), output).toEqual([]);
      expect(existsSync(runtimeDir), output).toBe(false);
      expect(instanceCgroups(dataDir), output).toEqual([]);
      console.log(`SIGTERM at ${String(moment)}: exit ${String(code)} after ${exitMs} ms`);
    }
  }, 180_000);
});
