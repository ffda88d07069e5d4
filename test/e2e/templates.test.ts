import { existsSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, startTestServer, type TestServer } from '../support/server.js';

const KEY = 'key-for-the-templates-tests';

describe('GET /v1/templates', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({
      auth: { apiKeys: [{ key: KEY, name: 'dev' }] },
      runtime: { poolSize: 0 },
      limits: { maxAppsPerOwner: 3 },
    });
  });
  afterAll(() => server.stop());

  it('says what this installation runs, with versions, limits and the app URL', async () => {
    const res = await call(server.baseURL, '/v1/templates', { token: KEY });
    expect(res.status).toBe(200);
    const info = res.body as {
      templates: {
        name: string;
        available: boolean;
        lanes: { name: string; available: boolean }[];
      }[];
      runtimes: Record<string, string>;
      limits: Record<string, number>;
      apps: { urlPattern: string };
    };
    const node = info.templates.find((t) => t.name === 'node');
    expect(node).toMatchObject({ available: true });
    expect(node?.lanes.find((l) => l.name === 'fast')).toEqual({ name: 'fast', available: true });
    const python = info.templates.find((t) => t.name === 'python');
    const hasPython = existsSync('/usr/bin/python3') || existsSync('/usr/local/bin/python3');
    expect(python?.available).toBe(hasPython);
    if (hasPython) expect(info.runtimes.python).toMatch(/^\d+\.\d+\.\d+$/);
    expect(info.runtimes.node).toBe(process.versions.node);
    expect(info.limits).toMatchObject({ maxSourceBytes: 50 * 1024 * 1024, maxAppsPerOwner: 3 });
    const port = new URL(server.baseURL).port;
    expect(info.apps.urlPattern).toBe(`http://{name}.localhost:${port}`);
  });

  it('needs a key', async () => {
    expect((await call(server.baseURL, '/v1/templates')).status).toBe(401);
  });
});
