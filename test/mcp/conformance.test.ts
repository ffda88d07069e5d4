import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, startTestServer, type TestServer } from '../support/server.js';
import { ALICE, API_KEYS, connect, fails, ok, type Seen } from './support.js';

/**
 * Issue 16 item 5: who may call /mcp from a browser (Origin, CORS), and what a strict MCP client
 * expects of the protocol (Parse error, capabilities, input schemas). Every call goes over real
 * HTTP; MCP calls go through the official SDK client.
 */

const ACCEPT = { accept: 'application/json, text/event-stream' };
const LISTED = 'http://localhost:6274';
const CONSOLE = 'https://console.example.com';

/** A tools/call of deploy_app as a browser page would POST it, from `origin`. */
function deployFrom(base: string, origin: string, name: string, token?: string) {
  return call(base, '/mcp', {
    method: 'POST',
    ...(token === undefined ? {} : { token }),
    headers: { ...ACCEPT, origin },
    json: {
      jsonrpc: '2.0',
      id: 7,
      method: 'tools/call',
      params: { name: 'deploy_app', arguments: { name, files: { 'index.html': 'pwned' } } },
    },
  });
}

const jsonRpcForbidden = {
  jsonrpc: '2.0',
  id: null,
  error: { code: -32000, message: expect.stringContaining('mcp.allowedOrigins') as unknown },
};

describe('MCP with auth disabled: a page on a foreign origin cannot drive the tools', () => {
  let server: TestServer;
  let base: string;
  let local: Client;

  beforeAll(async () => {
    server = await startTestServer({
      auth: { enabled: false },
      runtime: { poolSize: 1 },
      mcp: { allowedOrigins: [LISTED] },
    });
    base = server.baseURL;
    local = (await connect(base, undefined)).client;
  });
  afterAll(async () => {
    await local?.close();
    await server?.stop();
  });

  it('serves a client that sends no Origin, or its own', async () => {
    expect((await local.listTools()).tools.length).toBeGreaterThan(5);
    const { client } = await connect(base, undefined, { headers: { origin: base } });
    expect(await ok(client, 'list_apps')).toMatchObject({ total: 0 });
    await client.close();
  });

  it('refuses a foreign Origin with 403 before any tool runs', async () => {
    // A name that is no loopback host: the host guard refuses it on every route (rebinding).
    await expect(
      connect(base, undefined, { headers: { origin: 'http://attacker.example' } }),
    ).rejects.toMatchObject({ code: 403 });
    const rebound = await deployFrom(base, 'http://attacker.example', 'rebound');
    expect(rebound.status).toBe(403);
    // A page on another local port is loopback, but not this server's origin.
    const sibling = `http://localhost:${Number(new URL(base).port) === 1 ? 2 : 1}`;
    await expect(connect(base, undefined, { headers: { origin: sibling } })).rejects.toMatchObject({
      code: 403,
    });
    const neighbour = await deployFrom(base, sibling, 'neighbour');
    expect(neighbour.status).toBe(403);
    expect(neighbour.body).toEqual(jsonRpcForbidden);
    expect(neighbour.headers.get('access-control-allow-origin')).toBeNull();
    for (const name of ['rebound', 'neighbour']) {
      expect((await fails(local, 'get_app', { app_id: name })).error.code).toBe('not_found');
    }
  });

  it('serves a listed origin and lets its page read the answer (CORS)', async () => {
    const seen: Seen = { responses: [] };
    const { client } = await connect(base, undefined, { seen, headers: { origin: LISTED } });
    expect(await ok(client, 'list_apps')).toMatchObject({ total: 0 });
    const last = seen.responses.at(-1);
    expect(last?.status).toBe(200);
    expect(last?.headers.get('access-control-allow-origin')).toBe(LISTED);
    expect(last?.headers.get('access-control-expose-headers')).toBe('mcp-session-id');
    expect(last?.headers.get('vary')).toBe('Origin');
    await client.close();
  });
});

describe('MCP with auth enabled: origins, parse errors, capabilities, input schemas', () => {
  let server: TestServer;
  let base: string;
  let alice: Client;

  beforeAll(async () => {
    server = await startTestServer({
      auth: { apiKeys: API_KEYS },
      runtime: { poolSize: 0 },
      mcp: { allowedOrigins: [CONSOLE] },
    });
    base = server.baseURL;
    alice = (await connect(base, ALICE)).client;
  });
  afterAll(async () => {
    await alice?.close();
    await server?.stop();
  });

  it('refuses a foreign Origin even with a valid key, and serves a listed one', async () => {
    const foreign = await deployFrom(base, 'https://elsewhere.example', 'elsewhere', ALICE);
    expect(foreign.status).toBe(403);
    expect(foreign.body).toEqual(jsonRpcForbidden);
    expect((await fails(alice, 'get_app', { app_id: 'elsewhere' })).error.code).toBe('not_found');
    const seen: Seen = { responses: [] };
    const { client } = await connect(base, ALICE, { seen, headers: { origin: CONSOLE } });
    expect(await ok(client, 'list_apps')).toMatchObject({ total: 0 });
    expect(seen.responses.at(-1)?.headers.get('access-control-allow-origin')).toBe(CONSOLE);
    await client.close();
  });

  it("lets a listed origin's page read a 401 too, to learn that it must authenticate", async () => {
    const seen: Seen = { responses: [] };
    await expect(
      connect(base, undefined, { seen, headers: { origin: CONSOLE } }),
    ).rejects.toMatchObject({ code: 401 });
    expect(seen.responses[0]?.headers.get('access-control-allow-origin')).toBe(CONSOLE);
  });

  it('answers a body that is not JSON with a JSON-RPC Parse error', async () => {
    for (const path of ['/mcp', '/mcp/']) {
      const res = await call(base, path, {
        method: 'POST',
        token: ALICE,
        headers: { ...ACCEPT, 'content-type': 'application/json' },
        body: '{"jsonrpc": "2.0", "id": 1, "method": ',
      });
      expect(res.status, path).toBe(400);
      expect(res.headers.get('content-type')).toMatch(/^application\/json/);
      expect(res.body).toEqual({
        jsonrpc: '2.0',
        id: null,
        error: { code: -32700, message: expect.stringMatching(/^Parse error: /) as unknown },
      });
    }
  });

  it('advertises tools and resources without listChanged: a stateless server sends no notifications', async () => {
    const capabilities = alice.getServerCapabilities();
    expect(capabilities?.tools).toEqual({});
    expect(capabilities?.resources).toEqual({});
    // The raw initialize answer, as any client reads it.
    const res = await call(base, '/mcp', {
      method: 'POST',
      token: ALICE,
      headers: ACCEPT,
      json: {
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: {
          protocolVersion: '2025-06-18',
          capabilities: {},
          clientInfo: { name: 'raw', version: '1' },
        },
      },
    });
    expect(res.text).not.toContain('listChanged');
  });

  it('shows the name pattern and the runtime enums in the input schema of deploy_app', async () => {
    const { tools } = await alice.listTools();
    const deploy = tools.find((t) => t.name === 'deploy_app');
    const properties = deploy?.inputSchema.properties as Record<string, Record<string, unknown>>;
    expect(properties.name).toMatchObject({
      type: 'string',
      pattern: '^[a-z0-9]([a-z0-9-]*[a-z0-9])?$',
      minLength: 1,
      maxLength: 63,
    });
    const runtime = properties.runtime?.properties as Record<string, Record<string, unknown>>;
    expect(runtime.template?.enum).toEqual(['node', 'python', 'static']);
    expect(runtime.lane?.enum).toEqual(['fast', 'general']);
    // Refused by the schema, in the same words as the HTTP API, naming what to fix.
    const { error } = await fails(alice, 'deploy_app', {
      name: 'ok-name',
      files: { 'index.html': 'x' },
      runtime: { template: 'ruby' },
    });
    expect(error).toMatchObject({
      code: 'invalid_arguments',
      field: 'runtime.template',
      message: 'runtime.template must be one of node, python, static',
      next_step: 'fix runtime.template and call deploy_app again',
    });
    const long = await fails(alice, 'deploy_app', { name: 'a'.repeat(64), files: { a: 'x' } });
    expect(long.error).toMatchObject({
      field: 'name',
      message: 'name must be at most 63 characters',
    });
  });
});

describe('MCP CORS preflight', () => {
  let server: TestServer;
  let base: string;

  beforeAll(async () => {
    server = await startTestServer({
      auth: { apiKeys: API_KEYS },
      runtime: { poolSize: 0 },
      mcp: { allowedOrigins: [CONSOLE] },
    });
    base = server.baseURL;
  });
  afterAll(() => server?.stop());

  const preflight = (path: string, origin: string) =>
    call(base, path, {
      method: 'OPTIONS',
      headers: {
        origin,
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'authorization, content-type, mcp-protocol-version',
      },
    });

  it('grants a listed origin the methods and headers of streamable HTTP, without a token', async () => {
    for (const path of ['/mcp', '/mcp/']) {
      const res = await preflight(path, CONSOLE);
      expect(res.status, path).toBe(204);
      expect(Object.fromEntries(res.headers)).toMatchObject({
        'access-control-allow-origin': CONSOLE,
        'access-control-allow-methods': 'POST, GET, DELETE',
        'access-control-allow-headers':
          'authorization, content-type, mcp-protocol-version, mcp-session-id, last-event-id',
        'access-control-expose-headers': 'mcp-session-id',
        vary: 'Origin',
      });
    }
  });

  it('answers an OPTIONS without Origin (no preflight) with the methods', async () => {
    const res = await call(base, '/mcp', { method: 'OPTIONS' });
    expect(res.status).toBe(204);
    expect(res.headers.get('allow')).toBe('POST, GET, DELETE, OPTIONS');
    expect(res.headers.get('access-control-allow-origin')).toBeNull();
  });

  it('refuses any other origin with 403 and no CORS headers', async () => {
    for (const origin of ['https://elsewhere.example', base, 'null']) {
      const res = await preflight('/mcp', origin);
      expect(res.status, origin).toBe(403);
      expect(res.body).toMatchObject({ jsonrpc: '2.0', error: { code: -32000 } });
      const cors = [...res.headers.keys()].filter((name) => name.startsWith('access-control-'));
      expect(cors, origin).toEqual([]);
    }
  });
});
