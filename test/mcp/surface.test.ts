import { randomBytes } from 'node:crypto';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, startTestServer, type TestServer } from '../support/server.js';
import { ALICE, API_KEYS, BOB, connect, fails, nodeAppFiles, ok, type Seen } from './support.js';

/**
 * Every tool of issue 6, get_platform_info of issue 16, update_app of issue 28, wait_for_app and
 * cancel_deploy of issue 29.
 */
const TOOLS = [
  'get_platform_info',
  'deploy_app',
  'list_apps',
  'get_app',
  'wait_for_app',
  'cancel_deploy',
  'update_app',
  'get_app_logs',
  'delete_app',
  'suspend_app',
  'resume_app',
  'list_versions',
  'rollback_app',
  'create_share_link',
  'list_share_links',
  'revoke_share_link',
];

describe('MCP endpoint: tool list, authentication, ownership, bad input', () => {
  let server: TestServer;
  let alice: Client;
  let bob: Client;

  beforeAll(async () => {
    server = await startTestServer({ auth: { apiKeys: API_KEYS }, runtime: { poolSize: 1 } });
    alice = (await connect(server.baseURL, ALICE)).client;
    bob = (await connect(server.baseURL, BOB)).client;
  });
  afterAll(async () => {
    await alice?.close();
    await bob?.close();
    await server?.stop();
  });

  it('lists every tool with a description, an input schema and an output schema', async () => {
    const { tools } = await alice.listTools();
    const names = tools.map((t) => t.name);
    expect([...names].sort()).toEqual([...TOOLS].sort());
    for (const tool of tools) {
      expect(tool.description?.length ?? 0, tool.name).toBeGreaterThan(60);
      expect(tool.inputSchema.type, tool.name).toBe('object');
      expect(tool.outputSchema?.type, tool.name).toBe('object');
      const fields = Object.entries(tool.inputSchema.properties ?? {});
      for (const [field, schema] of [
        ...fields,
        ...Object.entries(tool.outputSchema?.properties ?? {}),
      ]) {
        expect((schema as { description?: string }).description, `${tool.name}.${field}`).toEqual(
          expect.any(String),
        );
      }
    }
    const deploy = tools.find((t) => t.name === 'deploy_app');
    expect(deploy?.inputSchema.required).toEqual(['name']);
    expect(Object.keys(deploy?.inputSchema.properties ?? {}).sort()).toEqual(
      ['access', 'egress', 'env', 'files', 'name', 'runtime', 'tarball_base64', 'ttl'].sort(),
    );
    const getApp = tools.find((t) => t.name === 'get_app');
    expect(getApp?.inputSchema.required).toEqual(['app_id']);
  });

  it('serves /mcp/ as well as /mcp', async () => {
    const { client } = await connect(server.baseURL, ALICE, { path: '/mcp/' });
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual([...TOOLS].sort());
    await client.close();
  });

  it('refuses a client without a token: 401 with the error body and a challenge', async () => {
    const seen: Seen = { responses: [] };
    await expect(connect(server.baseURL, undefined, { seen })).rejects.toMatchObject({ code: 401 });
    expect(seen.responses[0]?.status).toBe(401);
    expect(seen.responses[0]?.headers.get('www-authenticate')).toBe('Bearer');
    const raw = await call(server.baseURL, '/mcp', {
      method: 'POST',
      headers: { accept: 'application/json, text/event-stream' },
      json: { jsonrpc: '2.0', id: 1, method: 'tools/list' },
    });
    expect(raw.status).toBe(401);
    expect(raw.headers.get('www-authenticate')).toBe('Bearer');
    expect(raw.body).toMatchObject({ code: 'unauthenticated' });
    const wrong = await call(server.baseURL, '/mcp/', { method: 'POST', token: 'nope', json: {} });
    expect(wrong.status).toBe(401);
  });

  it('answers GET and DELETE with 405: the server is stateless and offers no stream', async () => {
    for (const method of ['GET', 'DELETE']) {
      const res = await call(server.baseURL, '/mcp', { method, token: ALICE });
      expect(res.status, method).toBe(405);
      expect(res.headers.get('allow')).toBe('POST');
      expect(res.body).toMatchObject({ jsonrpc: '2.0', error: { code: -32000 } });
    }
    expect((await call(server.baseURL, '/mcp', { method: 'GET' })).status).toBe(401);
  });

  it("treats another owner's app as not found on every tool", async () => {
    const deployed = await ok(bob, 'deploy_app', {
      name: 'bobs-secret',
      files: { 'index.html': '<h1>bob</h1>' },
    });
    expect(deployed).toMatchObject({ app_id: 'bobs-secret', phase: 'Ready' });
    for (const tool of [
      'get_app',
      'get_app_logs',
      'delete_app',
      'suspend_app',
      'resume_app',
      'list_versions',
    ]) {
      const { error } = await fails(alice, tool, { app_id: 'bobs-secret' });
      expect(error.code, tool).toBe('not_found');
    }
    const rollback = await fails(alice, 'rollback_app', { app_id: 'bobs-secret', version: 1 });
    expect(rollback.error.code).toBe('not_found');
    const listed = await ok(alice, 'list_apps');
    expect(JSON.stringify(listed)).not.toContain('bobs-secret');
    // Still there and still Bob's: nothing Alice called touched it.
    expect(await ok(bob, 'get_app', { app_id: 'bobs-secret' })).toMatchObject({ phase: 'Ready' });
    const taken = await fails(alice, 'deploy_app', {
      name: 'bobs-secret',
      files: { 'index.html': 'mine now' },
    });
    expect(taken.error.code).toBe('name_taken');
  });

  it.each([
    // The name's pattern is in the input schema: the SDK refuses it before the tool runs.
    ['a bad name', { name: 'Bad_Name', files: { 'index.html': 'x' } }, 'invalid_arguments'],
    ['an empty name', { name: '', files: { 'index.html': 'x' } }, 'invalid_arguments'],
    [
      'a reserved env name',
      { name: 'ok-name', files: { a: 'x' }, env: [{ name: 'PORT', value: '1' }] },
      'bad_metadata',
    ],
    ['a bad ttl', { name: 'ok-name', files: { a: 'x' }, ttl: 'forever' }, 'bad_metadata'],
    ['a path climbing out', { name: 'ok-name', files: { '../escape.js': 'x' } }, 'bad_request'],
    ['an absolute path', { name: 'ok-name', files: { '/etc/passwd': 'x' } }, 'bad_request'],
    [
      'a path given twice',
      { name: 'ok-name', files: { 'a.js': '1', './a.js': '2' } },
      'bad_request',
    ],
    [
      'a file used as a directory',
      { name: 'ok-name', files: { a: '1', 'a/b': '2' } },
      'bad_request',
    ],
    [
      'bad base64 content',
      { name: 'ok-name', files: { a: { content: '***', encoding: 'base64' } } },
      'bad_request',
    ],
    ['no source', { name: 'ok-name' }, 'missing_source'],
    ['an empty files map', { name: 'ok-name', files: {} }, 'missing_source'],
    ['two sources', { name: 'ok-name', files: { a: 'x' }, tarball_base64: 'H4sI' }, 'bad_request'],
    [
      'a tarball that is not gzip',
      { name: 'ok-name', tarball_base64: Buffer.from('plain').toString('base64') },
      'bad_request',
    ],
  ])('refuses a deploy with %s as %s', async (_what, args, code) => {
    const { error } = await fails(alice, 'deploy_app', args);
    expect(error.code).toBe(code);
    expect((await fails(alice, 'get_app', { app_id: 'ok-name' })).error.code).toBe('not_found');
  });

  it('names the offending file and field in the error', async () => {
    const { error } = await fails(alice, 'deploy_app', {
      name: 'ok-name',
      files: { ...nodeAppFiles('hi'), 'src/../../up.js': 'x' },
    });
    expect(error.message).toContain('src/../../up.js');
    expect(error.field).toBe('files["src/../../up.js"]');
    expect(error.message).toMatch(/^files\["src\/\.\.\/\.\.\/up\.js"\] /);
    const badName = await fails(alice, 'deploy_app', { name: 'UPPER', files: { a: 'x' } });
    expect(badName.error.field).toBe('name');
    expect(badName.result.content).toEqual([
      {
        type: 'text',
        text:
          'name must be lowercase letters, digits and "-", starting and ending with a letter or ' +
          'digit: fix name and call deploy_app again',
      },
    ]);
  });

  it('refuses arguments outside the input schema before running the tool, saying what to do', async () => {
    const { error } = await fails(alice, 'get_app', { app_id: 'Not An Id' });
    expect(error).toMatchObject({ code: 'invalid_arguments', field: 'app_id' });
    expect(error.next_step).toContain('input schema of get_app');
    const extra = await fails(alice, 'list_apps', { owner: 'someone' });
    expect(extra.error.message).toContain('owner');
    const env = await fails(alice, 'deploy_app', { name: 'x', files: {}, env: [{ name: 'A' }] });
    expect(env.error.field).toBe('env[0].value');
    const unknown = await fails(alice, 'no_such_tool', {});
    expect(unknown.error).toMatchObject({ code: 'unknown_tool' });
  });
});

describe('MCP deploy applies the source size cap of POST /v1/deploy', () => {
  let server: TestServer;
  let client: Client;
  const cap = 4096;

  beforeAll(async () => {
    server = await startTestServer({
      auth: { apiKeys: API_KEYS },
      runtime: { poolSize: 0 },
      limits: { maxSourceBytes: cap },
    });
    client = (await connect(server.baseURL, ALICE)).client;
  });
  afterAll(async () => {
    await client?.close();
    await server?.stop();
  });

  it('refuses a tarball or packed files over limits.maxSourceBytes with payload_too_large', async () => {
    const big = randomBytes(cap + 1);
    const tarball = await fails(client, 'deploy_app', {
      name: 'too-big',
      tarball_base64: big.toString('base64'),
    });
    expect(tarball.error).toMatchObject({ code: 'payload_too_large' });
    const files = await fails(client, 'deploy_app', {
      name: 'too-big',
      files: { 'blob.bin': { content: big.toString('base64'), encoding: 'base64' } },
    });
    expect(files.error).toMatchObject({ code: 'payload_too_large' });
    expect((await fails(client, 'get_app', { app_id: 'too-big' })).error.code).toBe('not_found');
  });

  it('refuses a request body far over the cap at the HTTP layer with 413', async () => {
    const huge = 'A'.repeat(2 * 1024 * 1024);
    const res = await call(server.baseURL, '/mcp', {
      method: 'POST',
      token: ALICE,
      headers: { accept: 'application/json, text/event-stream' },
      json: {
        jsonrpc: '2.0',
        id: 1,
        method: 'tools/call',
        params: { name: 'deploy_app', arguments: { name: 'huge', tarball_base64: huge } },
      },
    });
    expect(res.status).toBe(413);
    expect(res.body).toMatchObject({
      code: 'payload_too_large',
      // Room for the largest source as base64, and 1 MiB for the rest of the message.
      details: { limitBytes: Math.ceil(cap / 3) * 4 + 1024 * 1024 },
    });
  });
});
