import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fetchApp } from '../support/deploy.js';
import { call, startTestServer, type TestServer } from '../support/server.js';
import { tarGz } from '../support/tarball.js';
import { ALICE, API_KEYS, connect, fails, nodeAppFiles, ok, textOf } from './support.js';

describe('MCP deploy and app tools against real sandboxes', () => {
  let server: TestServer;
  let client: Client;

  beforeAll(async () => {
    server = await startTestServer({ auth: { apiKeys: API_KEYS }, runtime: { poolSize: 1 } });
    client = (await connect(server.baseURL, ALICE)).client;
  });
  afterAll(async () => {
    await client?.close();
    await server?.stop();
  });

  it('deploys a multi-file node app from files in one call; its URL answers', async () => {
    const result = await ok(client, 'deploy_app', {
      name: 'multi',
      files: nodeAppFiles('hello'),
      env: [{ name: 'UNUSED', value: 'x' }],
    });
    expect(result).toMatchObject({ app_id: 'multi', phase: 'Ready', version: 1 });
    expect(result.url).toMatch(/^http:\/\/multi\.localhost:\d+$/);
    expect(result.logs).toBeUndefined();
    const page = await fetchApp(String(result.url));
    expect(page.status).toBe(200);
    expect(page.body).toBe('hello, agent\n');
    // The base64 file arrived as bytes, not as its text.
    expect((await fetchApp(`${String(result.url)}/logo`)).body).toBe('cafebabe');
  });

  it('shows the app through get_app and list_apps, as GET /v1/apps does', async () => {
    const app = await ok(client, 'get_app', { app_id: 'multi' });
    const http = await call(server.baseURL, '/v1/apps/multi', { token: ALICE });
    expect(app).toEqual(http.body);
    expect(app).toMatchObject({ owner: 'apikey-alice', runtime: { template: 'node' } });
    // Env names only: the value never leaves the server.
    expect(app).toMatchObject({ live_version: 1, env: [{ name: 'UNUSED' }] });
    const list = await ok(client, 'list_apps', {});
    expect(list.total).toBe((list.items as unknown[]).length);
    expect(list).toEqual((await call(server.baseURL, '/v1/apps', { token: ALICE })).body);
    const page = await ok(client, 'list_apps', { limit: 1, offset: 5 });
    expect(page.items).toEqual([]);
  });

  it('reads the last log lines of the app', async () => {
    const logs = await ok(client, 'get_app_logs', { app_id: 'multi' });
    const lines = logs.lines as string[];
    expect(lines.some((line) => line.includes('multi app booting'))).toBe(true);
    expect(lines.every((line) => /^\d{4}-\d\d-\d\dT\S+Z /.test(line))).toBe(true);
    const one = await ok(client, 'get_app_logs', { app_id: 'multi', limit: 1 });
    expect(one.lines).toEqual(lines.slice(-1));
  });

  it('redeploys as a new version that serves the new files', async () => {
    const result = await ok(client, 'deploy_app', { name: 'multi', files: nodeAppFiles('howdy') });
    expect(result).toMatchObject({ phase: 'Ready', version: 2 });
    expect((await fetchApp(String(result.url))).body).toBe('howdy, agent\n');
    const v2 = (await ok(client, 'get_app_logs', { app_id: 'multi', version: 2 })).lines;
    const texts = (v2 as string[]).map((line) => line.replace(/^\S+ /, ''));
    expect(texts).toContain('[slipway] version 2 starting');
    expect(texts).toContain('[slipway] serving version 2');
    expect(texts.join('\n')).not.toContain('version 1');
  });

  it('refuses a redeploy it cannot run; the live version keeps serving', async () => {
    const { error, result } = await fails(client, 'deploy_app', {
      name: 'multi',
      files: { 'notes.txt': 'nothing to run' },
    });
    expect(error).toMatchObject({
      code: 'deploy_failed',
      message: expect.stringContaining('version 2 is still serving') as unknown,
    });
    // Refused before any sandbox, the version is still recorded, with Slipway's note about it.
    expect(result.structuredContent).toMatchObject({
      app_id: 'multi',
      phase: 'Ready',
      live_version: 2,
      version: 3,
      reason: 'NoEntrypoint',
      error: { code: 'deploy_failed' },
      logs: [
        expect.stringMatching(
          /\[slipway\] version 3 failed: NoEntrypoint: .*; version 2 is still serving$/,
        ) as unknown,
      ],
    });
    const history = await ok(client, 'list_versions', { app_id: 'multi' });
    expect((history.items as unknown[])[0]).toMatchObject({
      version: 3,
      outcome: 'Failed',
      reason: 'NoEntrypoint',
      live: false,
    });
    const app = await ok(client, 'get_app', { app_id: 'multi' });
    expect(app).toMatchObject({ phase: 'Ready' });
    expect((await fetchApp(String(app.url))).body).toBe('howdy, agent\n');
  });

  it('suspends and resumes the app', async () => {
    expect(await ok(client, 'suspend_app', { app_id: 'multi' })).toMatchObject({
      phase: 'Suspended',
    });
    const resumed = await ok(client, 'resume_app', { app_id: 'multi' });
    expect(resumed).toMatchObject({ phase: 'Ready' });
    expect((await fetchApp(String(resumed.url))).body).toBe('howdy, agent\n');
  });

  it('deploys a gzipped tarball sent as tarball_base64', async () => {
    const tarball = await tarGz({ 'index.html': '<h1>from a tarball</h1>' });
    const result = await ok(client, 'deploy_app', {
      name: 'tarred',
      tarball_base64: tarball.toString('base64'),
    });
    expect(result).toMatchObject({ phase: 'Ready' });
    expect((await fetchApp(String(result.url))).body).toContain('from a tarball');
  });

  it('returns a crash at start as a tool error with the log lines once, so the agent can fix it', async () => {
    const { error, result } = await fails(client, 'deploy_app', {
      name: 'crasher',
      files: {
        'package.json': JSON.stringify({ name: 'crash', main: 'server.js' }),
        'server.js':
          'console.log("booting the crasher"); console.error("missing API_URL"); process.exit(3);',
      },
    });
    expect(error).toMatchObject({
      code: 'deploy_failed',
      message: expect.stringMatching(/^deploy of crasher failed: AppExited: /) as unknown,
      next_step: expect.stringContaining('deploy_app again') as unknown,
    });
    // The summary is one line; the app's lines are in logs, and only there.
    expect(textOf(result)).not.toContain('missing API_URL');
    const occurrences = JSON.stringify(result).split('missing API_URL').length - 1;
    expect(occurrences).toBe(1);
    const structured = result.structuredContent as Record<string, unknown>;
    expect(structured).toMatchObject({ app_id: 'crasher', phase: 'Failed', reason: 'AppExited' });
    expect(structured.message).toContain('3');
    const logs = structured.logs as string[];
    expect(logs.some((line) => line.includes('booting the crasher'))).toBe(true);
    expect(logs.some((line) => line.includes('missing API_URL'))).toBe(true);
    expect(await ok(client, 'get_app', { app_id: 'crasher' })).toMatchObject({ phase: 'Failed' });
  });

  it('returns a source it cannot run as a failure whose reason says what to add', async () => {
    const { error, result } = await fails(client, 'deploy_app', {
      name: 'notes',
      files: { 'notes.txt': 'nothing to run' },
    });
    expect(error).toMatchObject({ code: 'deploy_failed' });
    expect(result.structuredContent).toMatchObject({
      phase: 'Failed',
      reason: 'NoEntrypoint',
      logs: [],
    });
    expect(String((result.structuredContent as { message: string }).message)).toContain(
      'package.json',
    );
  });

  it('counts tool calls in /metrics by tool and outcome', async () => {
    const metrics = await call(server.baseURL, '/metrics');
    const count = (tool: string, outcome: string): number => {
      const line = metrics.text
        .split('\n')
        .find((l) =>
          l.startsWith(`slipway_mcp_tool_calls_total{tool="${tool}",outcome="${outcome}"}`),
        );
      return line === undefined ? 0 : Number(line.split(' ').pop());
    };
    expect(count('deploy_app', 'ok')).toBe(3);
    expect(count('deploy_app', 'deploy_failed')).toBe(3);
    expect(count('get_app_logs', 'ok')).toBe(3);
    expect(metrics.text).toContain('slipway_mcp_tool_call_duration_seconds_bucket');
    expect(metrics.text).toMatch(
      /slipway_http_requests_total\{method="POST",route="\/mcp",status="200"\}/,
    );
  });

  it('deletes the app: its URL stops answering and the tools no longer find it', async () => {
    expect(await ok(client, 'delete_app', { app_id: 'multi' })).toEqual({
      app_id: 'multi',
      deleted: true,
    });
    expect((await fails(client, 'get_app', { app_id: 'multi' })).error.code).toBe('not_found');
    expect((await fails(client, 'delete_app', { app_id: 'multi' })).error.code).toBe('not_found');
    const port = new URL(server.baseURL).port;
    expect((await fetchApp(`http://multi.localhost:${port}/`)).status).toBe(404);
  });
});
