/**
 * Issue #9 item 18: /readyz showed sandbox and cgroup paths and the registry URL to anyone. It stays
 * open, but only an admin's bearer sees the components' details; everyone else gets the status and
 * each component's name and ok flag.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, startTestServer, type TestServer } from '../support/server.js';

const ADMIN = 'admin-readyz-key-0123456789';
const USER = 'user-readyz-key-01234567890';
const keys = [
  { key: ADMIN, name: 'ops', role: 'admin' as const },
  { key: USER, name: 'alice' },
];

/** Every component reduced to exactly `{ ok }`: names and health, nothing about the host. */
function expectSummaryOnly(body: unknown): void {
  const { status, components } = body as { status: string; components: Record<string, unknown> };
  expect(status).toBe('ready');
  expect(Object.keys(components)).toEqual(
    expect.arrayContaining(['store', 'sources', 'runtime', 'http']),
  );
  for (const value of Object.values(components)) expect(value).toEqual({ ok: true });
}

describe('/readyz details are for admins only', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ auth: { apiKeys: keys } });
  });
  afterAll(() => server.stop());

  it('gives an unauthenticated caller the status and component names only', async () => {
    const res = await call(server.baseURL, '/readyz');
    expect(res.status).toBe(200);
    expectSummaryOnly(res.body);
    expect(res.text).not.toContain(server.dataDir);
    expect(res.text).not.toContain('sqlite');
  });

  it('gives a non-admin bearer, and an invalid one, the same summary (and never a 401)', async () => {
    for (const token of [USER, 'not-a-key-at-all-0123456789']) {
      const res = await call(server.baseURL, '/readyz', { token });
      expect(res.status).toBe(200);
      expectSummaryOnly(res.body);
    }
  });

  it('gives an admin bearer the details', async () => {
    const res = await call(server.baseURL, '/readyz', { token: ADMIN });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      status: 'ready',
      components: { store: { ok: true, backend: 'sqlite' }, http: { ok: true } },
    });
    const runtime = (res.body as { components: { runtime: Record<string, unknown> } }).components
      .runtime;
    expect(Object.keys(runtime).length).toBeGreaterThan(1);
  });
});
