/**
 * Issue #9 item 20: with auth disabled on loopback, a page on a foreign name re-pointed at
 * 127.0.0.1 (DNS rebinding) could deploy apps through /v1 and /mcp. Without auth the control plane
 * now answers only loopback names in Host (and Origin, when sent); app hosts still reach apps.
 */
import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fetchApp } from '../support/deploy.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { deployStatic } from '../support/share.js';

interface Answer {
  status: number;
  body: unknown;
}

/** A request to the server's port with any Host and Origin (fetch will not send a foreign Host). */
function send(
  base: string,
  path: string,
  headers: Record<string, string>,
  init: { method?: string; json?: unknown } = {},
): Promise<Answer> {
  const port = new URL(base).port;
  const body = init.json === undefined ? undefined : JSON.stringify(init.json);
  const all: Record<string, string> = { ...headers };
  if (body !== undefined) {
    all['content-type'] = 'application/json';
    all.accept = 'application/json, text/event-stream';
  }
  return new Promise((resolve, reject) => {
    const req = request(
      { host: '127.0.0.1', port, path, method: init.method ?? 'GET', headers: all, agent: false },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (text += chunk));
        res.on('end', () => {
          let parsed: unknown = text;
          try {
            parsed = JSON.parse(text);
          } catch {
            // An HTML page or plain text: the test compares it as text.
          }
          resolve({ status: res.statusCode ?? 0, body: parsed });
        });
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

const MCP_INIT = {
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: {
    protocolVersion: '2025-06-18',
    capabilities: {},
    clientInfo: { name: 'rebinding-test', version: '1.0.0' },
  },
};

describe('DNS rebinding with auth disabled', () => {
  let server: TestServer;
  let base: string;
  let port: string;
  beforeAll(async () => {
    server = await startTestServer({ auth: { enabled: false }, runtime: { poolSize: 1 } });
    base = server.baseURL;
    port = new URL(base).port;
  });
  afterAll(() => server.stop());

  const forbidden = { status: 403, body: { code: 'forbidden', message: expect.any(String) } };

  it.each([
    ['GET', '/v1/apps', undefined],
    ['POST', '/v1/apps/x/suspend', undefined],
    ['POST', '/mcp', MCP_INIT],
    ['GET', '/api/whoami', undefined],
    ['GET', '/readyz', undefined],
  ])('refuses %s %s for a foreign Host', async (method, path, json) => {
    const res = await send(base, path, { host: `attacker.example:${port}` }, { method, json });
    expect(res).toMatchObject(forbidden);
  });

  it('refuses a loopback Host sent with a foreign Origin', async () => {
    const headers = { host: `localhost:${port}`, origin: 'http://attacker.example' };
    expect(await send(base, '/v1/apps', headers)).toMatchObject(forbidden);
    const mcp = await send(base, '/mcp', headers, { method: 'POST', json: MCP_INIT });
    expect(mcp).toMatchObject(forbidden);
    expect(await send(base, '/v1/apps', { ...headers, origin: 'null' })).toMatchObject(forbidden);
  });

  it.each([`localhost:${'PORT'}`, `127.0.0.1:PORT`, `[::1]:PORT`, 'localhost'])(
    'serves the loopback Host %s',
    async (host) => {
      const res = await send(base, '/v1/apps', { host: host.replace('PORT', port) });
      expect(res.status).toBe(200);
    },
  );

  it('serves a loopback Origin, and /mcp through the SDK transport', async () => {
    const headers = { host: `127.0.0.1:${port}`, origin: `http://localhost:${port}` };
    expect((await send(base, '/v1/apps', headers)).status).toBe(200);
    const mcp = await send(
      base,
      '/mcp',
      { host: `127.0.0.1:${port}` },
      { method: 'POST', json: MCP_INIT },
    );
    expect(mcp.status).toBe(200);
    expect(mcp.body).toMatchObject({ jsonrpc: '2.0', id: 1, result: expect.any(Object) });
  });

  it('still routes app hosts to the app', async () => {
    const app = await deployStatic(base, 'unused', 'rebound', 'hello rebound');
    const res = await fetchApp(String(app.url));
    expect(res.status).toBe(200);
    expect(res.body).toContain('hello rebound');
  });
});

describe('with auth enabled the bearer decides, not the Host', () => {
  it('serves a foreign Host that carries a valid key', async () => {
    const key = 'alice-rebinding-key-0123456789';
    const server = await startTestServer({ auth: { apiKeys: [{ key, name: 'alice' }] } });
    try {
      const port = new URL(server.baseURL).port;
      const res = await send(server.baseURL, '/v1/apps', {
        host: `slipway.example:${port}`,
        authorization: `Bearer ${key}`,
      });
      expect(res.status).toBe(200);
    } finally {
      await server.stop();
    }
  });
});
