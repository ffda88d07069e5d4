import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { Progress } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fetchApp } from '../support/deploy.js';
import { call, startTestServer, type TestServer } from '../support/server.js';
import {
  ALICE,
  API_KEYS,
  BOB,
  connect,
  fails,
  nodeAppFiles,
  ok,
  textOf,
  type Seen,
  type ToolResult,
} from './support.js';

/**
 * Issue 16: an agent is never stuck, never misled. Progress for long calls, platform discovery,
 * errors in the tools' own words with a next step, and results that say what really happened.
 */

/** A node app that shows signs of life (output) but listens only after `delayMs`. */
function slowApp(delayMs: number, body: string): Record<string, string> {
  return {
    'package.json': JSON.stringify({ name: 'slow', main: 'server.js' }),
    'server.js': [
      "const { createServer } = require('node:http');",
      "let n = 0; const tick = setInterval(() => console.log('warming up ' + ++n), 200);",
      `setTimeout(() => { clearInterval(tick); createServer((q, s) => s.end(${JSON.stringify(body)})).listen(Number(process.env.PORT)); }, ${delayMs});`,
    ].join('\n'),
  };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Polls get_app until `until` holds for its result; returns that result. */
async function pollApp(
  client: Client,
  appId: string,
  until: (app: Record<string, unknown>) => boolean,
): Promise<Record<string, unknown>> {
  const deadline = Date.now() + 15_000;
  for (;;) {
    const result = (await client.callTool({
      name: 'get_app',
      arguments: { app_id: appId },
    })) as ToolResult;
    const app = result.structuredContent as Record<string, unknown> | undefined;
    if (!result.isError && app && until(app)) return app;
    if (Date.now() > deadline)
      throw new Error(`get_app ${appId}: never matched; last ${textOf(result)}`);
    await sleep(100);
  }
}

/** Calls a tool with a progressToken; every notification is recorded with whether it preceded the result. */
async function callWithProgress(
  client: Client,
  name: string,
  args: Record<string, unknown>,
): Promise<{ result: ToolResult; updates: Progress[]; afterResult: Progress[] }> {
  const updates: Progress[] = [];
  const afterResult: Progress[] = [];
  let settled = false;
  const result = (await client.callTool({ name, arguments: args }, undefined, {
    onprogress: (progress) => (settled ? afterResult : updates).push(progress),
  })) as ToolResult;
  settled = true;
  await sleep(200);
  return { result, updates, afterResult };
}

describe('MCP for agents (issue 16)', () => {
  let server: TestServer;
  let client: Client;
  let bob: Client;
  const seen: Seen = { responses: [] };

  beforeAll(async () => {
    server = await startTestServer({ auth: { apiKeys: API_KEYS }, runtime: { poolSize: 2 } });
    client = (await connect(server.baseURL, ALICE, { seen })).client;
    bob = (await connect(server.baseURL, BOB)).client;
  });
  afterAll(async () => {
    await client?.close();
    await bob?.close();
    await server?.stop();
  });

  const lastContentType = () => seen.responses.at(-1)?.headers.get('content-type') ?? '';

  it('streams ordered progress notifications, then the result, when the call has a progressToken', async () => {
    const { result, updates, afterResult } = await callWithProgress(client, 'deploy_app', {
      name: 'progress',
      files: nodeAppFiles('hello'),
    });
    expect(lastContentType()).toContain('text/event-stream');
    expect(result.isError).toBeFalsy();
    expect(result.structuredContent).toMatchObject({ phase: 'Ready', version: 1, lane: 'fast' });
    expect(updates.length).toBeGreaterThanOrEqual(3);
    expect(afterResult).toEqual([]);
    const messages = updates.map((u) => u.message);
    expect(messages[0]).toBe('queued');
    expect(messages).toContain('starting the app');
    expect(messages).toContain('waiting for the app to answer');
    expect(messages).not.toContain('switching traffic to the new version'); // nothing served yet
    expect(messages.at(-1)).toBe('serving');
    for (let i = 1; i < updates.length; i++) {
      expect(updates[i]?.progress).toBeGreaterThan(updates[i - 1]?.progress ?? Infinity);
    }
    expect(updates.every((u) => u.total === 7)).toBe(true);
  });

  it('answers plain JSON, without notifications, when the call has no progressToken', async () => {
    const result = await ok(client, 'deploy_app', { name: 'progress', files: nodeAppFiles('hi') });
    expect(result).toMatchObject({ phase: 'Ready', version: 2 });
    expect(lastContentType()).toContain('application/json');
  });

  it('streams progress for rollback_app and resume_app too', async () => {
    const rollback = await callWithProgress(client, 'rollback_app', {
      app_id: 'progress',
      version: 1,
    });
    expect(rollback.result.structuredContent).toMatchObject({ phase: 'Ready', version: 3 });
    expect(rollback.updates.map((u) => u.message)).toEqual(
      expect.arrayContaining(['queued', 'switching traffic to the new version', 'serving']),
    );
    await ok(client, 'suspend_app', { app_id: 'progress' });
    const resume = await callWithProgress(client, 'resume_app', { app_id: 'progress' });
    expect(resume.result.structuredContent).toMatchObject({ phase: 'Ready' });
    const messages = resume.updates.map((u) => u.message);
    expect(messages[0]).toBe('queued');
    expect(messages).toContain('serving');
    expect(messages.some((m) => m?.startsWith('starting the app: woke'))).toBe(true);
  });

  it("carries a failed rollback's log lines once, in logs", async () => {
    const broken = await fails(client, 'deploy_app', {
      name: 'progress',
      files: {
        'package.json': JSON.stringify({ name: 'broken', main: 'server.js' }),
        'server.js': 'console.error("BROKEN-" + "MARK"); process.exit(2);',
      },
    });
    expect(broken.result.structuredContent).toMatchObject({ version: 4, live_version: 3 });
    const { error, result } = await fails(client, 'rollback_app', {
      app_id: 'progress',
      version: 4,
    });
    expect(error.code).toBe('deploy_failed');
    expect(error.next_step).toContain('list_versions');
    const structured = result.structuredContent as { logs: string[]; last_deploy: unknown };
    expect(structured).toMatchObject({ version: 5, live_version: 3, reason: 'AppExited' });
    expect(structured.logs.filter((line) => line.includes('BROKEN-MARK'))).toHaveLength(1);
    expect(JSON.stringify(result).split('BROKEN-MARK').length - 1).toBe(1);
    expect(structured.last_deploy).toMatchObject({ version: 5, outcome: 'Failed' });
  });

  it('tells what the platform runs, as a tool and as a resource, from GET /v1/templates', async () => {
    const http = await call(server.baseURL, '/v1/templates', { token: ALICE });
    expect(http.status).toBe(200);
    const info = await ok(client, 'get_platform_info');
    const { app_urls, waiting, ...rest } = info;
    expect(rest).toEqual(http.body);
    // Private apps exist (issue 22): the text says who may open which, not that all are public.
    expect(app_urls).toContain('private: only its owner');
    expect(app_urls).not.toContain('not private yet');
    expect(waiting).toContain('poll_after_seconds');
    expect(waiting).toContain('progressToken');
    const { resources } = await client.listResources();
    expect(resources).toContainEqual(
      expect.objectContaining({ uri: 'slipway://platform', mimeType: 'application/json' }),
    );
    const read = await client.readResource({ uri: 'slipway://platform' });
    const content = read.contents[0] as { text: string; uri: string };
    expect(content.uri).toBe('slipway://platform');
    expect(JSON.parse(content.text)).toEqual(info);
  });

  it('names the argument at fault, the way the tool spells it, and what to do next', async () => {
    const { error, result } = await fails(client, 'deploy_app', {
      name: 'env-check',
      files: { 'index.html': 'x' },
      env: [{ name: '1BAD', value: 'x' }],
    });
    expect(error).toMatchObject({ code: 'bad_metadata', field: 'env[0].name' });
    expect(textOf(result)).toBe(
      'env[0].name must be a variable name: letters, digits and _, not starting with a digit: ' +
        'fix env[0].name and call deploy_app again',
    );
    const missing = await fails(client, 'get_app', { app_id: 'nothing-here' });
    expect(textOf(missing.result)).toBe('app not found: list_apps shows your apps');
    await ok(bob, 'deploy_app', { name: 'bobs', files: { 'index.html': 'bob' } });
    const taken = await fails(client, 'deploy_app', { name: 'bobs', files: { 'index.html': 'a' } });
    expect(taken.error.code).toBe('name_taken');
    expect(textOf(taken.result)).toMatch(/: choose another name$/);
    const version = await fails(client, 'rollback_app', { app_id: 'progress', version: 99 });
    expect(version.error.next_step).toBe('list_versions shows the versions you can roll back to');
  });

  it('tells a files map under one folder to drop the folder prefix', async () => {
    const files = Object.fromEntries(
      Object.entries(nodeAppFiles('nested')).map(([path, content]) => [`myapp/${path}`, content]),
    );
    const { error, result } = await fails(client, 'deploy_app', { name: 'nested', files });
    expect(error.code).toBe('deploy_failed');
    expect(error.next_step).toContain('drop the "myapp/" prefix from the keys of files');
    expect(result.structuredContent).toMatchObject({ reason: 'NoEntrypoint' });
    // The same files at the root deploy.
    const fixed = await ok(client, 'deploy_app', { name: 'nested', files: nodeAppFiles('nested') });
    expect(fixed).toMatchObject({ phase: 'Ready' });
  });

  it('shows live_version and last_deploy, and no url before the app has served', async () => {
    const deploying = client.callTool({
      name: 'deploy_app',
      arguments: { name: 'slow', files: slowApp(4000, 'slow ok') },
    }) as Promise<ToolResult>;
    const starting = await pollApp(client, 'slow', (app) => app.phase === 'Starting');
    expect(starting).toMatchObject({
      live_version: null,
      last_deploy: { version: 1, outcome: 'Pending' },
      url_when_live: expect.stringMatching(/^http:\/\/slow\.localhost:\d+$/) as unknown,
    });
    expect(starting.url).toBeUndefined();
    const listed = await ok(client, 'list_apps');
    const inList = (listed.items as Array<Record<string, unknown>>).find(
      (a) => a.app_id === 'slow',
    );
    expect(inList?.url).toBeUndefined();
    const done = await deploying;
    expect(done.isError, textOf(done)).toBeFalsy();
    expect(done.structuredContent).toMatchObject({ phase: 'Ready', version: 1 });
    const live = await ok(client, 'get_app', { app_id: 'slow' });
    expect(live).toMatchObject({ live_version: 1, last_deploy: { version: 1, outcome: 'Ready' } });
    expect(live.url_when_live).toBeUndefined();
    expect((await fetchApp(String(live.url))).body).toBe('slow ok');
  });

  it('answers a deploy still going after the wait with what it does, its URL to be and when to poll', async () => {
    const result = await ok(client, 'deploy_app', {
      name: 'slower',
      files: slowApp(13_000, 'slower ok'),
    });
    expect(result).toMatchObject({
      phase: 'Starting',
      version: 1,
      lane: 'fast',
      // The app takes 13 s to listen: the call answers while Slipway waits for it to.
      activity: { step: 'health-checking', since: expect.any(String) as unknown },
      poll_after_seconds: 2,
      next_step: expect.stringContaining('wait_for_app') as unknown,
      url_when_live: expect.stringMatching(/^http:\/\/slower\.localhost:\d+$/) as unknown,
    });
    expect(result.url).toBeUndefined();
    const live = await pollApp(client, 'slower', (app) => app.phase === 'Ready');
    expect(live.url).toBe(result.url_when_live);
  }, 30_000);

  it('says so when a newer deploy supersedes the call before its version served', async () => {
    const first = client.callTool({
      name: 'deploy_app',
      arguments: { name: 'raced', files: slowApp(8000, 'first') },
    }) as Promise<ToolResult>;
    await pollApp(client, 'raced', (app) => app.phase === 'Starting');
    const second = await ok(client, 'deploy_app', { name: 'raced', files: nodeAppFiles('second') });
    expect(second).toMatchObject({ phase: 'Ready', version: 2 });
    const overtaken = await first;
    expect(overtaken.isError).toBe(true);
    expect(overtaken._meta?.['slipway/error']).toMatchObject({
      code: 'superseded',
      message: 'version 1 was superseded by version 2 before it served',
    });
    expect(textOf(overtaken)).toContain('get_app follows it');
    expect(overtaken.structuredContent).toMatchObject({
      app_id: 'raced',
      version: 1,
      superseded_by: 2,
      reason: 'Superseded',
      error: { code: 'superseded' },
    });
    expect((await fetchApp(String(second.url))).body).toBe('second, agent\n');
  });

  it('says so when the app is deleted while the call deploys it', async () => {
    const first = client.callTool({
      name: 'deploy_app',
      arguments: { name: 'doomed', files: slowApp(8000, 'never') },
    }) as Promise<ToolResult>;
    await pollApp(client, 'doomed', (app) => app.phase === 'Starting');
    await ok(client, 'delete_app', { app_id: 'doomed' });
    const gone = await first;
    expect(gone.isError).toBe(true);
    expect(gone._meta?.['slipway/error']).toMatchObject({
      code: 'app_deleted',
      message: 'app doomed was deleted while version 1 deployed',
    });
    expect(textOf(gone)).toMatch(/call deploy_app again to bring it back$/);
  });
});
