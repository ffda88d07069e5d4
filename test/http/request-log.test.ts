import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import Fastify, { LogController, type FastifyInstance } from 'fastify';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { installRequestLog, RequestStats } from '../../src/http/request-log.js';
import { pathOf } from '../../src/logging.js';
import { freePort, startServerProcess } from '../support/server-process.js';

const KEY = `reqlog-admin-${randomBytes(16).toString('hex')}`;
const SECRET = `sekrit${randomBytes(8).toString('hex')}`;

describe('RequestStats', () => {
  it('counts by status class and gives p50/p99, then starts afresh', () => {
    const stats = new RequestStats();
    expect(stats.take()).toBeUndefined();
    for (let ms = 1; ms <= 100; ms += 1) stats.record(ms <= 90 ? 200 : ms <= 98 ? 404 : 503, ms);
    stats.record(302, 0.5);
    expect(stats.take()).toEqual({
      requests: 101,
      '2xx': 90,
      '3xx': 1,
      '4xx': 8,
      '5xx': 2,
      p50Ms: 50,
      p99Ms: 99,
    });
    expect(stats.take()).toBeUndefined();
  });

  it('keeps the query string (tokens) out of the path', () => {
    expect(pathOf('/api/share/abc?password=x')).toBe('/api/share/abc');
    expect(pathOf('/v1/apps')).toBe('/v1/apps');
  });
});

describe('request log lines', () => {
  it('writes one debug line per request and an aggregated info line per interval', async () => {
    const lines: Record<string, unknown>[] = [];
    const stream = new Writable({
      write(chunk: Buffer, _enc, done) {
        for (const line of chunk.toString('utf8').split('\n').filter(Boolean)) {
          lines.push(JSON.parse(line) as Record<string, unknown>);
        }
        done();
      },
    });
    const app = Fastify({
      logger: { level: 'debug', stream },
      logController: new LogController({ disableRequestLogging: true }),
    }) as unknown as FastifyInstance;
    // The interval is driven by the test (three of them, one with traffic), not waited for.
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
    installRequestLog(app, { intervalMs: 100 });
    app.get('/ok', async () => ({ ok: true }));
    await app.inject({
      url: `/ok?token=${SECRET}`,
      headers: { authorization: `Bearer ${SECRET}` },
    });
    await app.inject({ url: '/missing' });
    vi.advanceTimersByTime(300);
    vi.useRealTimers();
    await app.close();

    const perRequest = lines.filter((l) => l.msg === 'request completed');
    expect(perRequest.map((l) => [l.level, l.method, l.path, l.status])).toEqual([
      [20, 'GET', '/ok', 200],
      [20, 'GET', '/missing', 404],
    ]);
    expect(typeof perRequest[0]?.ms).toBe('number');
    const summaries = lines.filter((l) => l.msg === 'http requests');
    // One for the interval with traffic; none for the quiet ones, none at close (nothing new).
    expect(summaries).toHaveLength(1);
    expect(summaries[0]).toMatchObject({ level: 30, requests: 2, '2xx': 1, '4xx': 1 });
    expect(lines.filter((l) => l.msg === 'incoming request')).toEqual([]);
    expect(JSON.stringify(lines)).not.toContain(SECRET);
  });
});

describe('the real server at info', () => {
  const root = mkdtempSync(join(tmpdir(), 'slipway-reqlog-'));
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  it('logs no per-request lines, one aggregated line, and no token from a query or header', async () => {
    const server = await startServerProcess({
      dataDir: join(root, 'data'),
      port: await freePort(),
      env: { SVC_AUTH_API_KEY: KEY },
    });
    try {
      for (let i = 0; i < 20; i += 1) {
        const res = await fetch(`${server.baseURL}/v1/apps?token=${SECRET}`, {
          headers: { authorization: `Bearer ${KEY}`, cookie: `grant=${SECRET}` },
        });
        expect(res.status).toBe(200);
        await res.arrayBuffer();
      }
      const bad = await fetch(`${server.baseURL}/v1/apps/nope?secret=${SECRET}`, {
        headers: { authorization: `Bearer ${KEY}` },
      });
      expect(bad.status).toBe(404);
    } finally {
      expect(await server.stop('SIGTERM')).toBe(0);
    }
    const output = server.output();
    const text = output.join('\n');
    expect(text).not.toMatch(/incoming request|request completed/);
    expect(text).not.toContain(SECRET);
    expect(text).not.toContain(KEY);
    // Written at the latest when the server stops (the interval is a minute).
    const summary = output.find((l) => l.includes('"msg":"http requests"'));
    expect(summary, text).toBeDefined();
    const parsed = JSON.parse(summary ?? '{}') as Record<string, number>;
    expect(parsed.level).toBe(30);
    expect(parsed['2xx']).toBeGreaterThanOrEqual(20);
    expect(parsed['4xx']).toBe(1);
    expect(parsed.p99Ms).toBeGreaterThanOrEqual(parsed.p50Ms ?? 0);
  }, 120_000);
});
