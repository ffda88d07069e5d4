import { get, type IncomingMessage } from 'node:http';
import { gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, startTestServer, type TestServer } from '../support/server.js';

const KEY = 'dashboard-serving-key-0123456789';
const FIRST_LOAD_LIMIT = 150 * 1024;

/** GET over node:http, which (unlike fetch) leaves the body as it came over the wire. */
function raw(base: string, path: string, gzip = true) {
  return new Promise<{ res: IncomingMessage; body: Buffer }>((resolve, reject) => {
    const headers = { 'accept-encoding': gzip ? 'gzip, br' : 'identity' };
    get(base + path, { headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ res, body: Buffer.concat(chunks) }));
      res.on('error', reject);
    }).on('error', reject);
  });
}

describe('the dashboard at /', () => {
  let server: TestServer;
  let base: string;
  beforeAll(async () => {
    server = await startTestServer({ auth: { apiKeys: [{ key: KEY, name: 'alice' }] } });
    base = server.baseURL;
  });
  afterAll(() => server?.stop());

  it('is open without a token and locked down by its headers', async () => {
    const page = await call(base, '/');
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(page.headers.get('cache-control')).toBe('no-cache');
    expect(page.headers.get('x-content-type-options')).toBe('nosniff');
    const csp = page.headers.get('content-security-policy') ?? '';
    for (const directive of [
      "default-src 'self'",
      "script-src 'self'",
      "style-src 'self'",
      "connect-src 'self'",
      "object-src 'none'",
      "base-uri 'none'",
      "frame-ancestors 'none'",
    ]) {
      expect(csp).toContain(directive);
    }
    expect(csp).not.toContain('unsafe-inline');
    expect(csp).not.toContain('unsafe-eval');
    // Nothing inline and nothing from another origin: every script and style is a hashed asset.
    expect(page.text).not.toMatch(/<script(?![^>]*\ssrc="\/assets\/)/);
    expect(page.text).not.toContain('<style');
    expect(page.text).not.toMatch(/(src|href)="(https?:)?\/\//);
  });

  it('serves content-hashed assets as immutable, gzipped on request', async () => {
    const page = await call(base, '/');
    const paths = [...page.text.matchAll(/(?:src|href)="(\/assets\/[^"]+)"/g)].map((m) => m[1]);
    expect(paths.length).toBeGreaterThanOrEqual(3);
    for (const path of paths) {
      const { res } = await raw(base, String(path));
      expect(res.statusCode, path).toBe(200);
      expect(res.headers['cache-control'], path).toBe('public, max-age=31536000, immutable');
      expect(res.headers['content-encoding'], path).toBe('gzip');
      expect(res.headers.vary, path).toBe('accept-encoding');
    }
    const script = paths.find((p) => p?.endsWith('.js'));
    const { res, body } = await raw(base, String(script), false);
    expect(res.headers['content-encoding']).toBeUndefined();
    expect(res.headers['content-type']).toBe('text/javascript; charset=utf-8');
    expect(body.toString('utf8')).toContain('/api/auth');
  });

  it('answers an unknown or malformed asset name with the 404 error body', async () => {
    for (const path of ['/assets/app-NOTTHERE.js', '/assets/..%2Fpackage.json', '/assets/a.map']) {
      const res = await call(base, path);
      expect([400, 404], path).toContain(res.status);
      expect((res.body as { code: string }).code, path).toMatch(/not_found|bad_request/);
    }
  });

  it('keeps the first load (page, script, stylesheet) under 150 KB gzipped', async () => {
    const page = await raw(base, '/');
    const html = gunzipSync(page.body).toString('utf8');
    const paths = [...html.matchAll(/(?:src|href)="(\/assets\/[^"]+\.(?:js|css))"/g)];
    expect(paths.length).toBe(2);
    let total = page.body.length;
    for (const [, path] of paths) {
      const asset = await raw(base, String(path));
      expect(asset.res.headers['content-encoding']).toBe('gzip');
      total += asset.body.length;
    }
    console.log(`dashboard first load: ${total} bytes gzipped`);
    expect(total).toBeGreaterThan(5_000);
    expect(total).toBeLessThanOrEqual(FIRST_LOAD_LIMIT);
  });

  it('tells the page the auth mode; no oidc block outside oidc mode', async () => {
    const info = await call(base, '/api/auth');
    expect(info.body).toEqual({ enabled: true, mode: 'apikey', loginUrl: '' });
  });
});
