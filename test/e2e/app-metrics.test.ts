/**
 * Per-app request metrics, on whichever data path carries visitors (the native-front-door project
 * runs this file again through HAProxy): `slipway_app_requests_total{app, code}` counts what each
 * app answered, by status class, and a deleted app's series go with it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deploy, fetchApp } from '../support/deploy.js';
import { call, startTestServer, type TestServer } from '../support/server.js';
import { tarGz } from '../support/tarball.js';

const ADMIN = 'app-metrics-admin-key-0123456789';
let server: TestServer;

beforeAll(async () => {
  server = await startTestServer({
    auth: { apiKeys: [{ key: ADMIN, name: 'admin', role: 'admin' }] },
    runtime: { poolSize: 1 },
  });
});
afterAll(() => server.stop());

/** The counter's value for one app and class, 0 when the series is absent. */
async function count(app: string, code: string): Promise<number> {
  const metrics = await call(server.baseURL, '/metrics', { token: ADMIN });
  const prefix = `slipway_app_requests_total{app="${app}",code="${code}"} `;
  const line = metrics.text.split('\n').find((l) => l.startsWith(prefix));
  return line === undefined ? 0 : Number(line.slice(prefix.length));
}

/** Polls until `check` holds: the native path's counters are read once a second. */
async function until(check: () => Promise<boolean>, what: string): Promise<void> {
  const deadline = Date.now() + 20_000;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`not within 20 s: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

describe('per-app request metrics', () => {
  it('counts each app’s answers by status class, and forgets a deleted app', async () => {
    const source = await tarGz({
      'package.json': JSON.stringify({ name: 'counted', main: 'server.js' }),
      'server.js': `require('node:http').createServer((req, res) => {
  res.statusCode = req.url === '/missing' ? 404 : 200;
  res.end('ok');
}).listen(process.env.PORT);`,
    });
    const res = await deploy(server.baseURL, ADMIN, { name: 'counted' }, source);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const url = String(res.body.url);
    for (let i = 0; i < 3; i += 1) expect((await fetchApp(url)).status).toBe(200);
    for (let i = 0; i < 2; i += 1) expect((await fetchApp(`${url}/missing`)).status).toBe(404);

    await until(
      async () => (await count('counted', '2xx')) === 3 && (await count('counted', '4xx')) === 2,
      'three 2xx and two 4xx counted',
    );
    expect(await count('counted', '5xx')).toBe(0);

    const deleted = await call(server.baseURL, '/v1/apps/counted', {
      method: 'DELETE',
      token: ADMIN,
    });
    expect(deleted.status).toBe(204);
    await until(async () => (await count('counted', '2xx')) === 0, 'the series removed');
    const metrics = await call(server.baseURL, '/metrics', { token: ADMIN });
    expect(metrics.text).not.toContain('app="counted"');
  });
});
