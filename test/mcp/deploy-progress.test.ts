import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { Progress } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { quickFiles, slowBuildFiles } from '../support/build-apps.js';
import { fetchApp } from '../support/deploy.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { ALICE, API_KEYS, BOB, connect, ok, textOf, type ToolResult } from './support.js';

const SLOW = 180_000;
/** What a progress notification carrying one of the build's own lines says. */
const BUILD_NOTE = /^building: build step \d+ of \d+$/;

interface Activity {
  step: string;
  since: string;
  last_line?: string;
}

/** Calls wait_for_app until `until` holds for the app; returns that app. */
async function waitUntil(
  client: Client,
  appId: string,
  until: (app: Record<string, unknown>) => boolean,
): Promise<Record<string, unknown>> {
  let app = await ok(client, 'get_app', { app_id: appId });
  while (!until(app)) {
    const activity = app.activity as Activity | undefined;
    app = await ok(client, 'wait_for_app', {
      app_id: appId,
      phase: app.phase,
      step: activity?.step ?? '',
      // Below the SDK's own 60 s request timeout.
      timeout_seconds: 30,
    });
  }
  return app;
}

/**
 * Issue 29 for agents, with the official MCP SDK client and real sandboxes: a deploy_app call
 * with a progressToken stays open until the app serves, with the build's lines as progress;
 * cancelling it cancels the deploy; wait_for_app answers on a change or at its timeout.
 */
describe('MCP: waiting for and cancelling a slow deploy (issue 29)', () => {
  let server: TestServer;
  let client: Client;

  beforeAll(async () => {
    server = await startTestServer({ auth: { apiKeys: API_KEYS }, runtime: { poolSize: 2 } });
    client = (await connect(server.baseURL, ALICE)).client;
  }, SLOW);
  afterAll(async () => {
    await client?.close();
    await server?.stop();
  });

  it(
    'with a progressToken, answers deploy_app only once the app serves, with build lines as progress',
    async () => {
      const updates: Progress[] = [];
      // A build of about 12 s: past the 10 s a call without a token waits.
      const files = slowBuildFiles('served after a long build', { lines: 30, everyMs: 400 });
      const result = (await client.callTool(
        { name: 'deploy_app', arguments: { name: 'mcp-slow', files } },
        undefined,
        { onprogress: (p) => updates.push(p), timeout: SLOW, resetTimeoutOnProgress: true },
      )) as ToolResult;
      // Asked at once: the call answered because the app serves, not because a wait ran out.
      const served = await fetchApp(String((result.structuredContent ?? {}).url));
      expect(result.isError, textOf(result)).toBeFalsy();
      expect(result.structuredContent).toMatchObject({ phase: 'Ready', version: 1 });
      expect(result.structuredContent?.activity).toBeUndefined();
      expect(served).toMatchObject({ status: 200, body: 'served after a long build' });
      const lines = updates.filter((u) => BUILD_NOTE.test(u.message ?? ''));
      expect(lines.length, JSON.stringify(updates)).toBeGreaterThanOrEqual(3);
      for (let i = 1; i < updates.length; i++) {
        expect(updates[i]?.progress).toBeGreaterThan(updates[i - 1]?.progress ?? Infinity);
      }
    },
    SLOW,
  );

  it(
    'cancels the deploy when the call is cancelled: the live version keeps serving, Cancelled recorded',
    async () => {
      const first = await ok(client, 'deploy_app', {
        name: 'mcp-cancel',
        files: quickFiles('first and still'),
      });
      expect(first).toMatchObject({ phase: 'Ready', version: 1 });
      expect(first.warnings).toBeUndefined();
      const url = String(first.url);

      const abort = new AbortController();
      let building!: () => void;
      const inBuild = new Promise<void>((resolve) => (building = resolve));
      const files = slowBuildFiles('never served', { lines: 400, everyMs: 250 });
      const call = client.callTool(
        { name: 'deploy_app', arguments: { name: 'mcp-cancel', files } },
        undefined,
        {
          signal: abort.signal,
          timeout: SLOW,
          resetTimeoutOnProgress: true,
          onprogress: (p) => void (BUILD_NOTE.test(p.message ?? '') && building()),
        },
      );
      const rejected = call.then(
        () => 'answered',
        () => 'rejected',
      );
      await inBuild;
      // The SDK sends notifications/cancelled for the call, in a POST of its own.
      abort.abort('the user changed their mind');
      expect(await rejected).toBe('rejected');

      const after = await waitUntil(
        client,
        'mcp-cancel',
        (app) => (app.last_deploy as { outcome?: string } | null)?.outcome !== 'Pending',
      );
      expect(after).toMatchObject({
        phase: 'Ready',
        live_version: 1,
        last_deploy: { version: 2, outcome: 'Cancelled' },
      });
      expect(after.activity).toBeUndefined();
      expect(await fetchApp(url)).toMatchObject({ status: 200, body: 'first and still' });
      const versions = await ok(client, 'list_versions', { app_id: 'mcp-cancel' });
      expect(versions.items).toContainEqual(
        expect.objectContaining({ version: 2, outcome: 'Cancelled', live: false }),
      );
    },
    SLOW,
  );

  it(
    'cancel_deploy cancels a deploy in flight, and says nothing_to_cancel when none is',
    async () => {
      const none = (await client.callTool({
        name: 'cancel_deploy',
        arguments: { app_id: 'mcp-cancel' },
      })) as ToolResult;
      expect(none.isError).toBe(true);
      expect(none._meta?.['slipway/error']).toMatchObject({ code: 'nothing_to_cancel' });

      const files = slowBuildFiles('not this one', { lines: 400, everyMs: 250 });
      const deploying = client.callTool({
        name: 'deploy_app',
        arguments: { name: 'mcp-cancel', files },
      }) as Promise<ToolResult>;
      await waitUntil(
        client,
        'mcp-cancel',
        (app) => (app.activity as Activity | undefined)?.step === 'building',
      );
      // Another caller naming every request id Alice's client may have used cancels nothing.
      for (let requestId = 0; requestId <= 40; requestId++) {
        const res = await fetch(`${server.baseURL}/mcp`, {
          method: 'POST',
          headers: {
            authorization: `Bearer ${BOB}`,
            'content-type': 'application/json',
            accept: 'application/json, text/event-stream',
          },
          body: JSON.stringify({
            jsonrpc: '2.0',
            method: 'notifications/cancelled',
            params: { requestId, reason: 'not yours' },
          }),
        });
        expect(res.status).toBe(202);
      }
      const still = await ok(client, 'get_app', { app_id: 'mcp-cancel' });
      expect(still).toMatchObject({ last_deploy: { version: 3, outcome: 'Pending' } });
      expect((still.activity as Activity | undefined)?.step).toBe('building');
      const cancelled = await ok(client, 'cancel_deploy', { app_id: 'mcp-cancel' });
      expect(cancelled).toMatchObject({
        phase: 'Ready',
        live_version: 1,
        last_deploy: { version: 3, outcome: 'Cancelled' },
      });
      const answered = await deploying;
      expect(answered.isError).toBe(true);
      expect(answered._meta?.['slipway/error']).toMatchObject({ code: 'deploy_cancelled' });
      expect(textOf(answered)).toContain('version 1 is still serving');
    },
    SLOW,
  );

  it('says in the deploy result when the app ignored $PORT and its port was rerouted', async () => {
    const server3000 =
      "require('node:http').createServer((q, s) => s.end('on 3000')).listen(3000);";
    const result = await ok(client, 'deploy_app', {
      name: 'mcp-port',
      files: { 'server.js': server3000 },
    });
    expect(result).toMatchObject({ phase: 'Ready' });
    expect(result.warnings).toEqual([
      expect.stringMatching(
        /^the app listens on port 3000, not on \$PORT \(\d+\): Slipway routes to 3000 .*PORT/,
      ),
    ]);
    expect((await fetchApp(String(result.url))).body).toBe('on 3000');
  });

  it(
    'goes on deploying when the client of a call with a progressToken goes away without cancelling',
    async () => {
      const abort = new AbortController();
      const files = slowBuildFiles('outlived its caller', { lines: 20, everyMs: 300 });
      const res = await fetch(`${server.baseURL}/mcp`, {
        method: 'POST',
        signal: abort.signal,
        headers: {
          authorization: `Bearer ${ALICE}`,
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
        },
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: 1,
          method: 'tools/call',
          params: {
            name: 'deploy_app',
            arguments: { name: 'mcp-drop', files },
            _meta: { progressToken: 'drop' },
          },
        }),
      });
      expect(res.headers.get('content-type')).toContain('text/event-stream');
      // Read the stream until the build shows, then hang up.
      const reader = (res.body as ReadableStream<Uint8Array>).getReader();
      const decoder = new TextDecoder();
      let text = '';
      while (!/building: build step/.test(text)) {
        const { done, value } = await reader.read();
        if (done) throw new Error(`the stream ended before the build: ${text}`);
        text += decoder.decode(value, { stream: true });
      }
      abort.abort();
      const after = await waitUntil(
        client,
        'mcp-drop',
        (app) => (app.last_deploy as { outcome?: string } | null)?.outcome !== 'Pending',
      );
      expect(after).toMatchObject({
        phase: 'Ready',
        last_deploy: { version: 1, outcome: 'Ready' },
      });
      expect((await fetchApp(String(after.url))).body).toBe('outlived its caller');
    },
    SLOW,
  );

  it(
    'wait_for_app answers when the step changes, and at its timeout when nothing does',
    async () => {
      const started = Date.now();
      const idle = await ok(client, 'wait_for_app', { app_id: 'mcp-slow', timeout_seconds: 1 });
      expect(Date.now() - started).toBeGreaterThanOrEqual(900);
      expect(idle).toMatchObject({ phase: 'Ready', changed: false });

      const files = slowBuildFiles('second build', { lines: 12, everyMs: 400 });
      const deploying = client.callTool({
        name: 'deploy_app',
        arguments: { name: 'mcp-slow', files },
      }) as Promise<ToolResult>;
      const inBuild = await waitUntil(
        client,
        'mcp-slow',
        (app) => (app.activity as Activity | undefined)?.step === 'building',
      );
      expect(inBuild.poll_after_seconds).toBeGreaterThanOrEqual(1);
      // Told nothing: it waits from where the app is now, and answers once the build is over.
      const next = await ok(client, 'wait_for_app', { app_id: 'mcp-slow', timeout_seconds: 30 });
      expect(next.changed).toBe(true);
      const step = (next.activity as Activity | undefined)?.step;
      expect(step === undefined ? next.phase : step).not.toBe('building');
      // What the caller saw last is behind already: the answer is immediate.
      const behind = await ok(client, 'wait_for_app', {
        app_id: 'mcp-slow',
        phase: 'Starting',
        step: 'queued',
        timeout_seconds: 30,
      });
      expect(behind.changed).toBe(true);
      const done = await deploying;
      expect(done.isError, textOf(done)).toBeFalsy();
    },
    SLOW,
  );
});
