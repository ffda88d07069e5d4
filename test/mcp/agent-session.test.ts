import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fetchApp } from '../support/deploy.js';
import { call, startTestServer, type TestServer } from '../support/server.js';
import { ALICE, API_KEYS, connect, nodeAppFiles, textOf, type ToolResult } from './support.js';

/**
 * Issue 16: a scripted agent session that knows only what tools/list says. Every tool it calls is
 * found at runtime by what its description (or a result's next step, or a field's description)
 * says, never by a name written here; each step acts on what the previous result said.
 */
describe('an agent session driven only by tools/list', () => {
  let server: TestServer;
  let client: Client;
  let tools: Tool[];

  beforeAll(async () => {
    server = await startTestServer({ auth: { apiKeys: API_KEYS }, runtime: { poolSize: 2 } });
    client = (await connect(server.baseURL, ALICE)).client;
    ({ tools } = await client.listTools());
  });
  afterAll(async () => {
    await client?.close();
    await server?.stop();
  });

  /** The one listed tool whose description says `purpose`. */
  const toolFor = (purpose: RegExp): Tool => {
    const matching = tools.filter((tool) => purpose.test(tool.description ?? ''));
    expect(
      matching.map((tool) => tool.name),
      `one tool whose description matches ${String(purpose)}`,
    ).toHaveLength(1);
    return matching[0] as Tool;
  };

  /** The listed tool a text names (a next step, a field description); it must be in the list. */
  const toolNamedIn = (text: string): Tool => {
    const named = tools.filter((tool) => new RegExp(`\\b${tool.name}\\b`).test(text));
    expect(
      named.map((tool) => tool.name),
      `one listed tool named in "${text}"`,
    ).toHaveLength(1);
    return named[0] as Tool;
  };

  const properties = (tool: Tool, schema: 'inputSchema' | 'outputSchema' = 'inputSchema') =>
    (tool[schema]?.properties ?? {}) as Record<string, { description?: string }>;

  const use = async (tool: Tool, args: Record<string, unknown>): Promise<ToolResult> => {
    expect(tools.map((t) => t.name)).toContain(tool.name);
    return (await client.callTool({ name: tool.name, arguments: args })) as ToolResult;
  };

  const structured = (result: ToolResult): Record<string, unknown> => {
    expect(result.structuredContent, textOf(result)).toBeDefined();
    return result.structuredContent as Record<string, unknown>;
  };

  it('deploys a multi-file app, breaks it, reads the failure, fixes it, shares it and revokes the link', async () => {
    // 1. Deploy: the tool that deploys source, taking a map of files.
    const deploy = toolFor(/deploys source code as a live web app/i);
    expect(properties(deploy).files?.description).toMatch(/map of relative path/);
    const first = await use(deploy, { name: 'agent-app', files: nodeAppFiles('hello') });
    expect(first.isError, textOf(first)).toBeFalsy();
    const live = structured(first);
    expect(live).toMatchObject({ phase: 'Ready', version: 1 });
    const url = String(live.url);
    expect((await fetchApp(url)).body).toBe('hello, agent\n');

    // 2. Break it: the same files, but the entry throws as it starts. The description promised
    // that a failed redeploy leaves the serving version up and comes back with logs to fix.
    expect(deploy.description).toMatch(/failure comes as an error with reason, message and logs/);
    const brokenFiles = {
      ...nodeAppFiles('hello'),
      'src/server.js': "throw new Error('GREETING_STYLE is not set');",
    };
    const broken = await use(deploy, { name: 'agent-app', files: brokenFiles });
    expect(broken.isError).toBe(true);

    // 3. Read the failure: the logs carry the cause, the next step says what to call.
    const failure = structured(broken);
    expect(failure).toMatchObject({ phase: 'Ready', version: 2, live_version: 1 });
    const logs = failure.logs as string[];
    expect(logs.some((line) => line.includes('GREETING_STYLE is not set'))).toBe(true);
    const error = failure.error as { code: string; next_step: string };
    expect(error.code).toBe('deploy_failed');
    expect(textOf(broken)).toContain(error.next_step);
    expect(error.next_step).toMatch(/fix the files/);
    const redeploy = toolNamedIn(error.next_step);
    expect(redeploy.name).toBe(deploy.name);
    // Still serving version 1, as the failure said.
    expect((await fetchApp(url)).body).toBe('hello, agent\n');

    // 4. Fix it and deploy again, as the next step said.
    const fixed = await use(redeploy, { name: 'agent-app', files: nodeAppFiles('fixed') });
    expect(fixed.isError, textOf(fixed)).toBeFalsy();
    expect(structured(fixed)).toMatchObject({ phase: 'Ready', version: 3, url });
    expect((await fetchApp(url)).body).toBe('fixed, agent\n');

    // 5. Share it with a password: the tool that makes a public link, with a password argument.
    const share = toolFor(/public link .*password/i);
    expect(properties(share).password?.description).toMatch(/Visitors must enter it/);
    const created = await use(share, { app_id: String(live.app_id), password: 'open sesame' });
    expect(created.isError, textOf(created)).toBeFalsy();
    const link = structured(created);
    expect(link).toMatchObject({ app_id: 'agent-app', has_password: true });
    const token = String(link.token);
    const page = new URL(String(link.url));

    // 6. The link works over HTTP: the page asks for the password, and its form posts it to the
    // share API next to the page (what the page's own script does), which answers the app's URL.
    const html = await call(page.origin, page.pathname);
    expect(html.status).toBe(200);
    expect(html.text).toContain('password');
    expect(html.text).not.toContain(url);
    const api = new URL(`../api/share/${encodeURIComponent(token)}`, page).pathname;
    const wrong = await call(page.origin, api, { method: 'POST', json: { password: 'guess' } });
    expect(wrong.status).toBe(401);
    const opened = await call(page.origin, api, {
      method: 'POST',
      json: { password: 'open sesame' },
    });
    expect(opened.status).toBe(200);
    expect(opened.body).toMatchObject({ name: 'agent-app', status: 'Ready', url });
    expect((await fetchApp(url)).body).toBe('fixed, agent\n');

    // 7. Revoke it: the token's description names the tool that takes it.
    const tokenField = properties(share, 'outputSchema').token?.description ?? '';
    const revoke = toolNamedIn(tokenField);
    expect(revoke.description).toMatch(/Revokes a share link/);
    const revoked = await use(revoke, { token });
    expect(revoked.isError, textOf(revoked)).toBeFalsy();
    expect(structured(revoked)).toMatchObject({ token, revoked: true });

    // 8. The link no longer resolves, page or API; the app itself is untouched.
    expect((await call(page.origin, page.pathname)).status).toBe(404);
    const gone = await call(page.origin, api, {
      method: 'POST',
      json: { password: 'open sesame' },
    });
    expect(gone.status).toBe(404);
    expect((await fetchApp(url)).body).toBe('fixed, agent\n');
  });
});
