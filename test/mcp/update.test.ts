/**
 * Issue 28 item 2 over MCP, through the official SDK client (which checks every structured result
 * against the tool's output schema): update_app changes access and env without source.
 */
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fetchApp } from '../support/deploy.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { ALICE, API_KEYS, BOB, connect, fails, ok } from './support.js';

const FIRST = 'mcp-first-7c1d9e3a';
const SECOND = 'mcp-second-2b8f6a4e';

const files = {
  'package.json': JSON.stringify({ name: 'tuned', main: 'server.js' }),
  'server.js':
    "if (process.env.CRASH) { console.error('CRASH is set'); process.exit(1); }\n" +
    "require('node:http').createServer((q, s) => s.end('hello ' + process.env.GREETING)).listen(process.env.PORT);",
};

describe('MCP update_app', { timeout: 120_000 }, () => {
  let server: TestServer;
  let alice: Client;
  let bob: Client;
  const results: string[] = [];
  const call = async (client: Client, args: Record<string, unknown>) => {
    const result = await ok(client, 'update_app', args);
    results.push(JSON.stringify(result));
    return result;
  };

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

  it('lists update_app with a described, closed input schema', async () => {
    const { tools } = await alice.listTools();
    const tool = tools.find((t) => t.name === 'update_app');
    expect(tool?.inputSchema.required).toEqual(['app_id']);
    expect(Object.keys(tool?.inputSchema.properties ?? {}).sort()).toEqual(
      ['access', 'app_id', 'egress', 'env', 'ttl'].sort(),
    );
    const env = (tool?.inputSchema.properties as Record<string, Record<string, unknown>>).env;
    expect(env?.additionalProperties).toBe(false);
    expect(tool?.annotations).toMatchObject({ destructiveHint: false, openWorldHint: false });
  });

  it('changes access and env without source: a new version serving the new value', async () => {
    const deployed = await ok(alice, 'deploy_app', {
      name: 'tuned',
      files,
      env: [{ name: 'GREETING', value: FIRST }],
    });
    expect(deployed).toMatchObject({ phase: 'Ready', version: 1 });
    const url = String(deployed.url);

    const closed = await call(alice, { app_id: 'tuned', access: 'private' });
    expect(closed).toMatchObject({ access: 'private', live_version: 1 });
    expect(closed.version).toBeUndefined();
    expect((await fetchApp(url)).status).toBe(401);

    const changed = await call(alice, {
      app_id: 'tuned',
      env: {
        set: [
          { name: 'GREETING', value: SECOND },
          { name: 'EXTRA', value: 'x' },
        ],
      },
    });
    expect(changed).toMatchObject({
      phase: 'Ready',
      version: 2,
      live_version: 2,
      access: 'private',
      env: [{ name: 'GREETING' }, { name: 'EXTRA' }],
    });
    const owner = { headers: { authorization: `Bearer ${ALICE}` } };
    expect((await fetchApp(url, owner)).body).toBe(`hello ${SECOND}`);

    const unset = await call(alice, { app_id: 'tuned', env: { unset: ['EXTRA'] }, ttl: '2h' });
    expect(unset).toMatchObject({ version: 3, env: [{ name: 'GREETING' }] });
    const history = await ok(alice, 'list_versions', { app_id: 'tuned' });
    const items = history.items as { version: number; source_hash: string; ttl: string }[];
    expect(items.map((v) => v.version)).toEqual([3, 2, 1]);
    expect(new Set(items.map((v) => v.source_hash)).size).toBe(1);
    expect(items[0]?.ttl).toBe('2h');
    results.push(JSON.stringify(history));

    for (const text of results) {
      expect(text).not.toContain(FIRST);
      expect(text).not.toContain(SECOND);
    }
  });

  it("refuses bad arguments naming the field, and another owner's app as not found", async () => {
    const cases: [Record<string, unknown>, string, string | undefined][] = [
      [{ app_id: 'tuned' }, 'bad_request', 'body'],
      [{ app_id: 'tuned', env: { unset: ['NOPE'] } }, 'bad_request', 'env.unset[0]'],
      [
        { app_id: 'tuned', env: { set: [{ name: 'PORT', value: '1' }] } },
        'bad_request',
        'env.set[0].name',
      ],
      [{ app_id: 'tuned', ttl: 'later' }, 'bad_request', 'ttl'],
      [{ app_id: 'tuned', env: { set: 'GREETING=x' } }, 'invalid_arguments', 'env.set'],
    ];
    for (const [args, code, field] of cases) {
      const { error } = await fails(alice, 'update_app', args);
      expect(error.code, JSON.stringify(args)).toBe(code);
      expect(error.field, JSON.stringify(args)).toBe(field);
    }
    const foreign = await fails(bob, 'update_app', { app_id: 'tuned', access: 'public' });
    expect(foreign.error.code).toBe('not_found');
    const app = await ok(alice, 'get_app', { app_id: 'tuned' });
    expect(app).toMatchObject({ access: 'private', live_version: 3 });
  });

  it('reports a config release that breaks the app as a failure, the version before still serving', async () => {
    const { error, result } = await fails(alice, 'update_app', {
      app_id: 'tuned',
      env: { set: [{ name: 'CRASH', value: '1' }] },
    });
    expect(error.code).toBe('deploy_failed');
    expect(result.structuredContent).toMatchObject({ version: 4, live_version: 3, phase: 'Ready' });
    expect(JSON.stringify(result)).toContain('CRASH is set');
    const app = await ok(alice, 'get_app', { app_id: 'tuned' });
    expect(app).toMatchObject({ live_version: 3, env: [{ name: 'GREETING' }] });
    const owner = { headers: { authorization: `Bearer ${ALICE}` } };
    expect((await fetchApp(String(app.url), owner)).body).toBe(`hello ${SECOND}`);
  });
});
