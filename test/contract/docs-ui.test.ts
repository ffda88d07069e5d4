import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { startTestServer, type TestServer } from '../support/server.js';
import { isObject, loadSpec, loadSpecText, type Json } from './openapi-doc.js';

/** `src` of scripts and `href` of links in an HTML page. */
function assetReferences(html: string): string[] {
  const refs: string[] = [];
  for (const tag of html.matchAll(/<(script|link)\b[^>]*>/gi)) {
    const attr = /\b(?:src|href)\s*=\s*["']([^"']+)["']/i.exec(tag[0]);
    if (attr?.[1]) refs.push(attr[1]);
  }
  return refs;
}

describe('Swagger UI and the raw spec over a real listener', () => {
  let server: TestServer;
  const get = (path: string): Promise<Response> =>
    fetch(server.baseURL + path, { redirect: 'manual' });

  beforeAll(async () => {
    server = await startTestServer({ auth: { enabled: false }, store: { backend: 'memory' } });
  });
  afterAll(() => server?.stop());

  it('redirects bare /api/docs to /api/docs/, keeping the query', async () => {
    const bare = await get('/api/docs');
    expect(bare.status).toBe(302);
    expect(new URL(bare.headers.get('location') ?? '', server.baseURL).pathname).toBe('/api/docs/');
    const withQuery = await get('/api/docs?tag=apps');
    expect(withQuery.headers.get('location')).toBe('/api/docs/?tag=apps');
  });

  it('serves the UI page with only same-origin assets and a self-only policy', async () => {
    const res = await get('/api/docs/');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/html/);
    const refs = assetReferences(await res.text());
    expect(refs.filter((r) => r.endsWith('.js')).length).toBeGreaterThanOrEqual(2);
    expect(refs.filter((r) => /^(https?:)?\/\//i.test(r))).toEqual([]);
    const origin = new URL(server.baseURL).origin;
    expect(refs.map((r) => new URL(r, `${server.baseURL}/api/docs/`).origin)).toEqual(
      refs.map(() => origin),
    );
    const csp = res.headers.get('content-security-policy') ?? '';
    expect(csp).toContain("default-src 'self'");
    expect(csp).not.toMatch(/https?:/);
  });

  it('loads every script and stylesheet the page references', async () => {
    const page = await (await get('/api/docs/')).text();
    const refs = assetReferences(page).filter((r) => /\.(js|css)$/.test(r));
    expect(refs.length).toBeGreaterThanOrEqual(4);
    for (const ref of refs) {
      const res = await get(new URL(ref, `${server.baseURL}/api/docs/`).pathname);
      expect(res.status, ref).toBe(200);
      expect(res.headers.get('content-type'), ref).toMatch(/javascript|css/);
      expect((await res.text()).length, ref).toBeGreaterThan(0);
    }
    const bundle = await get('/api/docs/static/swagger-ui-bundle.js');
    expect(Number(bundle.headers.get('content-length'))).toBeGreaterThan(100_000);
  });

  it('points the UI at our spec and never at the public validator', async () => {
    const init = await (await get('/api/docs/static/swagger-initializer.js')).text();
    expect(init).toContain("resolveUrl('./json')");
    expect(init).toMatch(/validatorUrl: null/);
    const res = await get('/api/docs/json');
    expect(res.status).toBe(200);
    const shown = (await res.json()) as Json;
    const paths = isObject(shown) && isObject(shown.paths) ? Object.keys(shown.paths) : [];
    const spec = loadSpec();
    expect(paths).toEqual(Object.keys(isObject(spec.paths) ? spec.paths : {}));
  });

  it('serves api/openapi.yaml verbatim as YAML', async () => {
    const res = await get('/api/docs/openapi.yaml');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^(application|text)\/(x-)?yaml/);
    const text = await res.text();
    expect(text).toBe(loadSpecText());
    expect((parseYaml(text) as { openapi: string }).openapi).toMatch(/^3\.1\./);
  });
});
