import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ResponseValidator, watchServer } from '../support/response-validator.js';
import { call, startTestServer } from '../support/server.js';

const json = (value: unknown): Buffer => Buffer.from(JSON.stringify(value));
const validator = new ResponseValidator();

describe('the response validator of the test harness', () => {
  it('passes a response that the spec describes', () => {
    const v = validator.fresh();
    v.check({
      method: 'GET',
      url: '/v1/apps?limit=1',
      status: 200,
      contentType: 'application/json; charset=utf-8',
      body: json({ items: [], total: 0 }),
    });
    v.check({
      method: 'GET',
      url: '/v1/apps/hello',
      status: 404,
      contentType: 'application/json',
      body: json({ code: 'not_found', message: 'app not found' }),
    });
    expect(v.violations).toEqual([]);
    expect(v.checked).toBe(2);
  });

  it('reports a wrong shape, an undocumented status and an undocumented content type', () => {
    const v = validator.fresh();
    v.check({
      method: 'GET',
      url: '/v1/apps',
      status: 200,
      contentType: 'application/json',
      body: json({ items: 'none' }),
    });
    v.check({
      method: 'GET',
      url: '/v1/apps/hello',
      status: 418,
      contentType: 'application/json',
      body: json({ code: 'teapot', message: 'no' }),
    });
    v.check({
      method: 'GET',
      url: '/v1/apps/hello',
      status: 200,
      contentType: 'text/html',
      body: Buffer.from('<p>hi</p>'),
    });
    expect(v.violations.map((x) => `${x.method} ${x.path} ${x.status}`)).toEqual([
      'GET /v1/apps 200',
      'GET /v1/apps/{id} 418',
      'GET /v1/apps/{id} 200',
    ]);
    expect(v.violations[0]?.problem).toMatch(/total|items/);
  });

  it('checks each event frame of a documented stream', () => {
    const v = validator.fresh();
    const good = {
      kind: 'phase',
      app_id: 'hello',
      owner: 'apikey-alice',
      phase: 'Ready',
      version: 1,
      reason: 'Running',
      message: 'serving version 1',
      time: '2025-01-01T12:00:00.000Z',
      initiator: 'user',
    };
    const frames =
      `: connected\n\nevent: app\ndata: ${JSON.stringify(good)}\n\n` +
      `event: app\ndata: ${JSON.stringify({ ...good, kind: 'exploded' })}\n\n`;
    v.check({
      method: 'GET',
      url: '/api/events',
      status: 200,
      contentType: 'text/event-stream',
      body: Buffer.from(frames),
    });
    expect(v.violations).toHaveLength(1);
    expect(v.violations[0]?.problem).toMatch(/kind/);
  });

  it('skips what the spec does not describe: successes of unknown paths, HEAD', () => {
    const v = validator.fresh();
    const css = Buffer.from('body{}');
    v.check({
      method: 'GET',
      url: '/api/docs/static/x.css',
      status: 200,
      contentType: 'text/css',
      body: css,
    });
    v.check({
      method: 'HEAD',
      url: '/healthz',
      status: 200,
      contentType: undefined,
      body: json(1),
    });
    expect(v.violations).toEqual([]);
    expect(v.checked).toBe(0);
  });

  it('holds unknown paths and wrong methods to the error envelope and the 405', () => {
    const v = validator.fresh();
    const envelope = json({ code: 'method_not_allowed', message: 'use GET' });
    v.check({
      method: 'POST',
      url: '/healthz',
      status: 405,
      contentType: 'application/json',
      body: envelope,
    });
    v.check({
      method: 'GET',
      url: '/nowhere',
      status: 404,
      contentType: 'application/json',
      body: json({ code: 'not_found', message: 'no route' }),
    });
    expect(v.violations).toEqual([]);
    v.check({
      method: 'GET',
      url: '/nowhere',
      status: 404,
      contentType: 'text/plain',
      body: Buffer.from('no'),
    });
    v.check({
      method: 'POST',
      url: '/healthz',
      status: 404,
      contentType: 'application/json',
      body: envelope,
    });
    v.check({
      method: 'PUT',
      url: '/v1/apps',
      status: 405,
      contentType: 'application/json',
      body: json({ error: 'no' }),
    });
    expect(v.violations.map((x) => `${x.method} ${x.path} ${x.status}`)).toEqual([
      'GET /nowhere 404',
      'POST /healthz 404',
      'PUT /v1/apps 405',
    ]);
  });
});

describe('watching a real HTTP server', () => {
  let server: Server;
  let base: string;
  const v = validator.fresh();
  beforeAll(async () => {
    // A server that breaks the spec on purpose: GET /v1/apps without `total`.
    server = createServer((req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ items: [] }));
    });
    watchServer(server, v);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it('catches the response that breaks the spec, on the wire', async () => {
    const res = await fetch(`${base}/v1/apps`);
    await res.text();
    await expect.poll(() => v.violations.length).toBe(1);
    expect(v.violations[0]).toMatchObject({ method: 'GET', path: '/v1/apps', status: 200 });
    expect(v.violations[0]?.problem).toMatch(/total/);
  });

  it('makes TestServer.stop() fail when its server sent such a response', async () => {
    const test = await startTestServer({ runtime: { poolSize: 0 } });
    const ok = await call(test.baseURL, '/healthz');
    expect(ok.status).toBe(200);
    expect(test.validator.checked).toBeGreaterThan(0);
    expect(test.validator.violations).toEqual([]);
    // Stands for a route answering beside the spec: the harness sees it as any other.
    test.validator.check({
      method: 'GET',
      url: '/v1/apps',
      status: 200,
      contentType: 'application/json',
      body: json({ items: [] }),
    });
    await expect(test.stop()).rejects.toThrow(/GET \/v1\/apps → 200: .*total/);
  });
});
