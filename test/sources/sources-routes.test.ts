import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Fastify, { type FastifyInstance } from 'fastify';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { installErrorHandlers } from '../../src/http/errors.js';
import { methodGuardPlugin } from '../../src/http/method-guard.js';
import { sourcesRoutes } from '../../src/http/sources-routes.js';
import { createDiskSourceStore } from '../../src/sources/disk-source-store.js';
import { mintSourceKey } from '../../src/sources/keys.js';
import type { SourceStore } from '../../src/sources/source-store.js';
import { tarGz } from '../support/tarball.js';

let dir: string;
let store: SourceStore;
let app: FastifyInstance;
let key: string;
let blob: Buffer;

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'slipway-sources-route-'));
  store = createDiskSourceStore(dir);
  key = mintSourceKey('hello', 3);
  blob = await tarGz({ 'index.html': 'Hello from a static Slipway app' });
  await store.put(key, blob);
  app = Fastify({ logger: false });
  installErrorHandlers(app);
  // As in the server: the method guard answers other methods on the route's path.
  await app.register(methodGuardPlugin);
  await app.register(sourcesRoutes(store));
  await app.ready();
});

afterEach(async () => {
  await app.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('/internal/sources/{key}.tar.gz', () => {
  it('serves the blob on GET as application/gzip with its length', async () => {
    const res = await app.inject({ method: 'GET', url: `/internal/sources/${key}.tar.gz` });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('application/gzip');
    expect(res.headers['content-length']).toBe(String(blob.length));
    expect(res.rawPayload.equals(blob)).toBe(true);
  });

  it('answers HEAD with the same headers and no body', async () => {
    const res = await app.inject({ method: 'HEAD', url: `/internal/sources/${key}.tar.gz` });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('application/gzip');
    expect(res.headers['content-length']).toBe(String(blob.length));
    expect(res.rawPayload.length).toBe(0);
  });

  it('answers 404 with the error body for a valid name with no blob', async () => {
    for (const method of ['GET', 'HEAD'] as const) {
      const res = await app.inject({
        method,
        url: `/internal/sources/${mintSourceKey('hello', 4)}.tar.gz`,
      });
      expect(res.statusCode, method).toBe(404);
    }
    const res = await app.inject({
      method: 'GET',
      url: `/internal/sources/${mintSourceKey('hello', 4)}.tar.gz`,
    });
    expect(res.json()).toEqual({ code: 'not_found', message: 'source blob not found' });
  });

  it('answers 404 for names that are not <key>.tar.gz', async () => {
    for (const name of [
      key,
      `${key}.tgz`,
      `${key}.tar`,
      `${key}.tar.gz.tmp`,
      'x.tar.gz',
      `..%2F${key}.tar.gz`,
      `${key.toUpperCase()}.tar.gz`,
      `%2e%2e%2fetc%2fpasswd`,
    ]) {
      const res = await app.inject({ method: 'GET', url: `/internal/sources/${name}` });
      expect(res.statusCode, name).toBe(404);
      expect(res.json(), name).toMatchObject({ code: 'not_found' });
    }
  });

  it('lists nothing', async () => {
    const other = mintSourceKey('other', 1);
    await store.put(other, blob);
    for (const url of [
      '/internal/sources/',
      '/internal/sources',
      `/internal/sources/${key}.tar.gz/`,
      `/internal/sources/x/${key}.tar.gz`,
    ]) {
      const res = await app.inject({ method: 'GET', url });
      expect(res.statusCode, url).toBe(404);
      expect(res.json(), url).toMatchObject({ code: 'not_found' });
      expect(res.body, url).not.toContain(other);
    }
  });

  it('answers 405 with allow: GET, HEAD to other methods', async () => {
    for (const method of ['POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'] as const) {
      const res = await app.inject({
        method,
        url: `/internal/sources/${key}.tar.gz`,
        payload: method === 'OPTIONS' ? undefined : 'x',
      });
      expect(res.statusCode, method).toBe(405);
      expect(res.headers.allow, method).toBe('GET, HEAD');
      expect(res.json(), method).toMatchObject({ code: 'method_not_allowed' });
    }
    expect(await store.size(key)).toBe(blob.length);
  });
});
