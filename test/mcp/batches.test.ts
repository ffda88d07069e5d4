import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isObject, loadSpec, operations } from '../contract/openapi-doc.js';
import { call, startTestServer, type TestServer } from '../support/server.js';
import { ALICE, API_KEYS } from './support.js';

/**
 * What JSON-RPC 2.0 §6 asks of batches, and what the stateless transport answers besides POST
 * (issue 30). Real server, real port; every response is checked against api/openapi.yaml.
 */
const HEADERS = { accept: 'application/json, text/event-stream' };
const ping = (id: number) => ({ jsonrpc: '2.0', id, method: 'ping' });

describe('the MCP endpoint at the edges of JSON-RPC', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ auth: { apiKeys: API_KEYS }, runtime: { poolSize: 0 } });
  });
  afterAll(() => server.stop());

  const post = (body: unknown) =>
    call(server.baseURL, '/mcp', { method: 'POST', token: ALICE, headers: HEADERS, json: body });

  it('answers a batch of one with an array of one', async () => {
    const res = await post([ping(1)]);
    expect(res.status).toBe(200);
    expect(res.body).toEqual([{ jsonrpc: '2.0', id: 1, result: {} }]);
    expect(res.headers.get('content-length')).toBe(String(Buffer.byteLength(res.text)));
  });

  it('answers a batch of a request and a notification with an array of one', async () => {
    const initialized = { jsonrpc: '2.0', method: 'notifications/initialized' };
    const res = await post([ping(2), initialized]);
    expect(res.status).toBe(200);
    expect(res.body).toEqual([{ jsonrpc: '2.0', id: 2, result: {} }]);
  });

  it('answers a batch of two with an array of two, and a single message with one object', async () => {
    expect((await post([ping(3), ping(4)])).body).toEqual([
      { jsonrpc: '2.0', id: 3, result: {} },
      { jsonrpc: '2.0', id: 4, result: {} },
    ]);
    expect((await post(ping(5))).body).toEqual({ jsonrpc: '2.0', id: 5, result: {} });
  });

  it('answers an empty batch with one Invalid Request error', async () => {
    const res = await post([]);
    expect(res.status).toBe(400);
    expect(res.body).toEqual({
      jsonrpc: '2.0',
      error: { code: -32600, message: 'Invalid Request: an empty batch' },
      id: null,
    });
  });

  it.each(['GET', 'DELETE'])(
    'answers %s 405, the only success-free answer the spec gives it',
    async (method) => {
      const res = await call(server.baseURL, '/mcp', { method, token: ALICE, headers: HEADERS });
      expect(res.status).toBe(405);
      expect(res.headers.get('allow')).toBe('POST');
      const documented = operations(loadSpec())
        .filter((o) => o.method === method && o.path.startsWith('/mcp'))
        .flatMap((o) => Object.keys(isObject(o.op.responses) ? o.op.responses : {}));
      expect(documented).toContain('405');
      expect(documented.filter((status) => /^[23]/.test(status))).toEqual([]);
    },
  );
});
