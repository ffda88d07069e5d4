import { createServer, type Server } from 'node:http';
import { exportJWK, generateKeyPair } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { removeDir, start, type Started } from '../auth/helpers.js';
import { AUDIENCE, freePort, KID, makeProvider } from '../auth/oidc-fixture.js';
import { connect, ok, type Seen } from './support.js';

describe('MCP endpoint in oidc mode against a real oidc-provider', () => {
  let issuer: string;
  let idp: Server;
  let s: Started;

  const clientToken = async (clientId: string): Promise<string> => {
    const response = await fetch(`${issuer}/token`, {
      method: 'POST',
      headers: {
        authorization: `Basic ${Buffer.from(`${clientId}:${clientId}-secret`).toString('base64')}`,
        'content-type': 'application/x-www-form-urlencoded',
      },
      body: new URLSearchParams({
        grant_type: 'client_credentials',
        resource: AUDIENCE,
        scope: 'deploy',
      }),
    });
    const body = (await response.json()) as { access_token?: string };
    if (!body.access_token) throw new Error(`token request failed: ${JSON.stringify(body)}`);
    return body.access_token;
  };

  beforeAll(async () => {
    const { privateKey } = await generateKeyPair('RS256', { extractable: true });
    const port = await freePort();
    issuer = `http://127.0.0.1:${port}`;
    const jwk = { ...(await exportJWK(privateKey)), kid: KID, alg: 'RS256', use: 'sig' };
    idp = createServer(makeProvider(issuer, jwk).callback());
    await new Promise<void>((resolve) => idp.listen(port, '127.0.0.1', resolve));
    s = await start({
      mode: 'oidc',
      oidc: {
        issuer,
        audience: AUDIENCE,
        roleClaim: 'realm_access.roles',
        adminRole: 'slipway-admin',
      },
    });
  });
  afterAll(async () => {
    await s?.close();
    if (s) removeDir(s.dataDir);
    await new Promise<void>((resolve) => (idp ? idp.close(() => resolve()) : resolve()));
  });

  it('refuses a client without a token with 401 pointing at the metadata of /mcp', async () => {
    const seen: Seen = { responses: [] };
    await expect(connect(s.baseURL, undefined, { seen })).rejects.toMatchObject({ code: 401 });
    // What the SDK client's own fetch got: the challenge an OAuth-capable client follows.
    const [first] = seen.responses;
    expect(first).toMatchObject({ method: 'POST', status: 401 });
    expect(first?.headers.get('www-authenticate')).toBe(
      `Bearer resource_metadata="${s.baseURL}/.well-known/oauth-protected-resource/mcp", ` +
        'scope="openid profile email"',
    );
    // RFC 9728: the metadata the challenge names describes the /mcp resource and its scopes.
    const metadata = await fetch(`${s.baseURL}/.well-known/oauth-protected-resource/mcp`);
    expect(metadata.status).toBe(200);
    expect(await metadata.json()).toMatchObject({
      resource: `${s.baseURL}/mcp`,
      authorization_servers: [issuer],
      scopes_supported: ['openid', 'profile', 'email'],
      bearer_methods_supported: ['header'],
    });
    // Elsewhere the challenge still names the server's own metadata.
    const v1 = await fetch(`${s.baseURL}/v1/apps`);
    expect(v1.headers.get('www-authenticate')).toBe(
      `Bearer resource_metadata="${s.baseURL}/.well-known/oauth-protected-resource"`,
    );
  });

  it('accepts a provider-issued token and acts as that user', async () => {
    const { client } = await connect(s.baseURL, await clientToken('plain-bot'));
    const deployed = await ok(client, 'deploy_app', {
      name: 'oidc-site',
      files: { 'index.html': '<p>hi</p>' },
    });
    expect(deployed).toMatchObject({ phase: 'Ready' });
    const app = await ok(client, 'get_app', { app_id: 'oidc-site' });
    expect(app.owner).toBe('plain-bot');
    await client.close();
  });
});
