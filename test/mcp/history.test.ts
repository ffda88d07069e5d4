import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fetchApp } from '../support/deploy.js';
import { call, startTestServer, type TestServer } from '../support/server.js';
import { ALICE, API_KEYS, connect, fails, ok } from './support.js';

const ADMIN = 'ops-key-0123456789abcdef';
const site = (text: string) => ({ 'index.html': `<h1>${text}</h1>`, 'style.css': 'h1 {}' });

interface Version {
  version: number;
  source_hash: string;
  rolled_back_from?: number;
}

describe('MCP history, rollback and audit', () => {
  let server: TestServer;
  let client: Client;
  let url: string;

  beforeAll(async () => {
    server = await startTestServer({
      auth: { apiKeys: [...API_KEYS, { key: ADMIN, name: 'ops', role: 'admin' }] },
      runtime: { poolSize: 1 },
    });
    client = (await connect(server.baseURL, ALICE)).client;
  });
  afterAll(async () => {
    await client?.close();
    await server?.stop();
  });

  const versions = async (): Promise<Version[]> =>
    (await ok(client, 'list_versions', { app_id: 'story' })).items as Version[];

  it('lists versions newest first; the same files pack to the same source hash', async () => {
    url = String((await ok(client, 'deploy_app', { name: 'story', files: site('one') })).url);
    await ok(client, 'deploy_app', { name: 'story', files: site('two') });
    // Same files, other key order: deterministic packing gives the same tarball.
    const reordered = { 'style.css': 'h1 {}', 'index.html': '<h1>one</h1>' };
    await ok(client, 'deploy_app', { name: 'story', files: reordered });
    const items = await versions();
    expect(items.map((v) => v.version)).toEqual([3, 2, 1]);
    expect(items[0]?.source_hash).toBe(items[2]?.source_hash);
    expect(items[1]?.source_hash).not.toBe(items[0]?.source_hash);
    expect(items[0]?.source_hash).toMatch(/^sha256:[0-9a-f]{64}$/);
    const http = await call(server.baseURL, '/v1/apps/story/versions', { token: ALICE });
    expect(http.body).toEqual({ items });
  });

  it('rolls back to an earlier version as a new head version that serves it', async () => {
    const rolled = await ok(client, 'rollback_app', { app_id: 'story', version: 2 });
    expect(rolled).toMatchObject({ app_id: 'story', phase: 'Ready', version: 4, url });
    expect((await fetchApp(url)).body).toContain('two');
    const [head] = await versions();
    expect(head).toMatchObject({ version: 4, rolled_back_from: 2 });
  });

  it('refuses a version that is not in the history with unknown_version', async () => {
    for (const version of [99, 0, -1]) {
      const { error } = await fails(client, 'rollback_app', { app_id: 'story', version });
      expect(error.code, String(version)).toBe('unknown_version');
    }
    expect((await versions()).length).toBe(4);
  });

  it('lets an agent recover from a broken deploy by rolling back', async () => {
    const broken = await fails(client, 'deploy_app', {
      name: 'story',
      files: {
        'package.json': JSON.stringify({ name: 'story', main: 'server.js' }),
        'server.js': 'throw new Error("story is broken");',
      },
    });
    expect(broken.error.code).toBe('deploy_failed');
    expect(JSON.stringify(broken.result.structuredContent)).toContain('story is broken');
    const rolled = await ok(client, 'rollback_app', { app_id: 'story', version: 4 });
    expect(rolled).toMatchObject({ phase: 'Ready', version: 6 });
    expect((await fetchApp(url)).body).toContain('two');
  });

  it('audits tool calls like their HTTP twins: actor, action, target, outcome', async () => {
    await ok(client, 'suspend_app', { app_id: 'story' });
    await ok(client, 'resume_app', { app_id: 'story' });
    await ok(client, 'delete_app', { app_id: 'story' });
    const audit = await call(server.baseURL, '/v1/audit?app=story', { token: ADMIN });
    expect(audit.status).toBe(200);
    const events = (audit.body as { events: Array<Record<string, string>> }).events;
    const seen = events.map((e) => `${e.action}:${e.outcome}`).reverse();
    expect(seen).toEqual([
      'deploy:ok',
      'deploy:ok',
      'deploy:ok',
      'deploy:ok',
      // The three refused rollbacks: refusals are audited too, as over HTTP.
      'deploy:rejected',
      'deploy:rejected',
      'deploy:rejected',
      'deploy:failed',
      'deploy:ok',
      'suspend:ok',
      'resume:ok',
      'delete:ok',
    ]);
    expect(events.every((e) => e.actor === 'apikey-alice' && e.target === 'story')).toBe(true);
  });
});
