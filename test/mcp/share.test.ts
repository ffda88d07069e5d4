import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, startTestServer, type TestServer } from '../support/server.js';
import { ALICE, API_KEYS, BOB, connect, fails, ok } from './support.js';

describe('MCP share-link tools', () => {
  let server: TestServer;
  let alice: Client;
  let bob: Client;
  let appUrl: string;

  beforeAll(async () => {
    server = await startTestServer({ auth: { apiKeys: API_KEYS }, runtime: { poolSize: 1 } });
    alice = (await connect(server.baseURL, ALICE)).client;
    bob = (await connect(server.baseURL, BOB)).client;
    const deployed = await ok(alice, 'deploy_app', {
      name: 'shown',
      files: { 'index.html': '<h1>look</h1>' },
    });
    appUrl = String(deployed.url);
  });
  afterAll(async () => {
    await alice?.close();
    await bob?.close();
    await server?.stop();
  });

  it('creates an open link that resolves over HTTP without a token', async () => {
    const link = await ok(alice, 'create_share_link', { app_id: 'shown' });
    expect(link).toMatchObject({ app_id: 'shown', has_password: false, expires_at: null });
    expect(link.token).toMatch(/^[0-9a-f]{64}$/);
    expect(link.url).toBe(`${server.baseURL}/share/${String(link.token)}`);
    const resolved = await call(server.baseURL, `/api/share/${String(link.token)}`);
    expect(resolved.status).toBe(200);
    expect(resolved.body).toEqual({
      name: 'shown',
      status: 'Ready',
      url: appUrl,
      access: 'public',
    });
  });

  it('says whether a link protects a private app or points at a public one', async () => {
    const open = await ok(alice, 'create_share_link', { app_id: 'shown', password: 'pw' });
    expect(open).toMatchObject({ app_access: 'public' });
    expect(String(open.protects)).toContain('protects only the link page');
    await ok(alice, 'revoke_share_link', { token: open.token });

    const hidden = await ok(alice, 'deploy_app', {
      name: 'hidden',
      files: { 'index.html': '<h1>hidden</h1>' },
      access: 'private',
    });
    expect(hidden).toMatchObject({ phase: 'Ready', access: 'private' });
    expect(await ok(alice, 'get_app', { app_id: 'hidden' })).toMatchObject({ access: 'private' });
    const link = await ok(alice, 'create_share_link', { app_id: 'hidden', password: 'pw' });
    expect(link).toMatchObject({ app_access: 'private', has_password: true });
    expect(String(link.protects)).toContain('The app is private');
    // A redeploy that names no access keeps it.
    const again = await ok(alice, 'deploy_app', {
      name: 'hidden',
      files: { 'index.html': '<h1>hidden 2</h1>' },
    });
    expect(again).toMatchObject({ access: 'private' });
    const bad = await fails(alice, 'deploy_app', {
      name: 'hidden',
      files: { 'index.html': 'x' },
      access: 'secret',
    });
    expect(bad.error.message).toContain('access');
  });

  it('creates a password-protected, expiring link', async () => {
    const link = await ok(alice, 'create_share_link', {
      app_id: 'shown',
      password: 'open sesame',
      expires_in: '1h30m',
    });
    expect(link).toMatchObject({ has_password: true, expires_in: '1h30m' });
    const expiresAt = Date.parse(String(link.expires_at));
    expect(expiresAt - Date.now()).toBeGreaterThan(89 * 60_000);
    expect(expiresAt - Date.now()).toBeLessThanOrEqual(90 * 60_000);
    const path = `/api/share/${String(link.token)}`;
    expect((await call(server.baseURL, path)).status).toBe(401);
    const unlocked = await call(server.baseURL, path, {
      method: 'POST',
      json: { password: 'open sesame' },
    });
    expect(unlocked.status).toBe(200);
    expect(unlocked.body).toMatchObject({ name: 'shown', url: appUrl });
    expect(JSON.stringify(link)).not.toContain('open sesame');
  });

  it('refuses a bad expires_in and an empty password with the HTTP codes', async () => {
    const late = await fails(alice, 'create_share_link', { app_id: 'shown', expires_in: '2d' });
    expect(late.error.code).toBe('bad_expires_in');
    const empty = await fails(alice, 'create_share_link', { app_id: 'shown', password: '' });
    expect(empty.error.code).toBe('bad_request');
  });

  it('lists the working links, and revokes one so that it resolves as 404', async () => {
    const listed = await ok(alice, 'list_share_links', { app_id: 'shown' });
    const items = listed.items as Array<{ token: string; has_password: boolean }>;
    expect(listed.total).toBe(2);
    expect(items.map((l) => l.has_password).sort()).toEqual([false, true]);
    const open = items.find((l) => !l.has_password);
    expect(open).toBeDefined();
    const token = String(open?.token);
    expect(await ok(alice, 'revoke_share_link', { token })).toEqual({ token, revoked: true });
    expect((await call(server.baseURL, `/api/share/${token}`)).status).toBe(404);
    expect((await ok(alice, 'list_share_links', { app_id: 'shown' })).total).toBe(1);
    expect((await fails(alice, 'revoke_share_link', { token })).error.code).toBe('not_found');
  });

  it("keeps another owner's app and links out of reach: not_found", async () => {
    for (const [tool, args] of [
      ['create_share_link', { app_id: 'shown' }],
      ['list_share_links', { app_id: 'shown' }],
    ] as const) {
      expect((await fails(bob, tool, args)).error.code, tool).toBe('not_found');
    }
    const [mine] = (await ok(alice, 'list_share_links', { app_id: 'shown' })).items as Array<{
      token: string;
    }>;
    const token = String(mine?.token);
    expect((await fails(bob, 'revoke_share_link', { token })).error.code).toBe('not_found');
    // Bob's attempt changed nothing: the link still resolves for its password.
    const still = await call(server.baseURL, `/api/share/${token}`, {
      method: 'POST',
      json: { password: 'open sesame' },
    });
    expect(still.status).toBe(200);
  });
});
