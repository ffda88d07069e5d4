import { createServer, type Server } from 'node:http';
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, json, removeDir, start, type Started } from './helpers.js';
import { AUDIENCE, freePort, KID, makeProvider } from './oidc-fixture.js';

describe('oidc mode against a real oidc-provider', () => {
  let issuer: string;
  let port: number;
  let privateKey: CryptoKey;
  let idp: Server | undefined;
  let s: Started;

  const clientToken = async (clientId: string, resource = AUDIENCE): Promise<string> => {
    const response = await fetch(`${issuer}/token`, {
      method: 'POST',
      headers: {
        authorization: `Basic ${Buffer.from(`${clientId}:${clientId}-secret`).toString('base64')}`,
        'content-type': 'application/x-www-form-urlencoded',
      },
      body: new URLSearchParams({ grant_type: 'client_credentials', resource, scope: 'deploy' }),
    });
    const body = (await response.json()) as { access_token?: string };
    if (!response.ok || !body.access_token)
      throw new Error(`token request failed: ${JSON.stringify(body)}`);
    return body.access_token;
  };

  const mint = (claims: Record<string, unknown>, key: CryptoKey = privateKey, kid = KID) => {
    const now = Math.floor(Date.now() / 1000);
    return new SignJWT({ sub: 'minted-user', ...claims })
      .setProtectedHeader({ alg: 'RS256', kid, typ: 'at+jwt' })
      .setIssuer((claims.iss as string | undefined) ?? issuer)
      .setAudience((claims.aud as string | undefined) ?? AUDIENCE)
      .setIssuedAt((claims.iat as number | undefined) ?? now)
      .setExpirationTime((claims.exp as number | undefined) ?? now + 300)
      .sign(key);
  };

  beforeAll(async () => {
    ({ privateKey } = await generateKeyPair('RS256', { extractable: true }));
    port = await freePort();
    issuer = `http://127.0.0.1:${port}`;
    // Slipway starts while the provider is still down: discovery must wait for the first request.
    s = await start({
      mode: 'oidc',
      identityCacheTTL: '0s',
      oidc: {
        issuer,
        audience: AUDIENCE,
        roleClaim: 'realm_access.roles',
        adminRole: 'slipway-admin',
      },
    });
  });
  afterAll(async () => {
    await s.close();
    removeDir(s.dataDir);
    await new Promise<void>((resolve) => (idp ? idp.close(() => resolve()) : resolve()));
  });

  it('answers 503 while the provider is down, then recovers once it is up', async () => {
    const early = await mint({});
    const down = await call(s.baseURL, '/api/whoami', { token: early });
    expect(down.status).toBe(503);
    expect(json(down.body).code).toBe('not_ready');

    const jwk = { ...(await exportJWK(privateKey)), kid: KID, alg: 'RS256', use: 'sig' };
    const provider = makeProvider(issuer, jwk);
    idp = createServer(provider.callback());
    await new Promise<void>((resolve) => idp?.listen(port, '127.0.0.1', resolve));

    const up = await call(s.baseURL, '/api/whoami', { token: early });
    expect(up.status).toBe(200);
    expect(json(up.body).user_id).toBe('minted-user');
  });

  it('accepts a provider-issued token; the admin role claim maps to admin', async () => {
    const admin = await call(s.baseURL, '/api/whoami', { token: await clientToken('admin-bot') });
    expect(admin.status).toBe(200);
    expect(admin.body).toEqual({
      user_id: 'admin-bot',
      name: 'admin-bot',
      email: 'admin-bot@example.com',
      role: 'admin',
      scopes: [],
      mode: 'oidc',
    });
    expect(
      (await call(s.baseURL, '/api/users', { token: await clientToken('admin-bot') })).status,
    ).toBe(200);

    const plain = await call(s.baseURL, '/api/whoami', { token: await clientToken('plain-bot') });
    expect(json(plain.body)).toMatchObject({ user_id: 'plain-bot', role: 'user' });
    expect(
      (await call(s.baseURL, '/api/users', { token: await clientToken('plain-bot') })).status,
    ).toBe(403);
    expect(s.app.store.getUser('plain-bot')?.status).toBe('active');
  });

  it('a suspended OIDC user is refused', async () => {
    const token = await clientToken('plain-bot');
    const user = s.app.store.getUser('plain-bot');
    if (!user) throw new Error('plain-bot was not provisioned');
    s.app.store.putUser({ ...user, status: 'suspended' });
    expect((await call(s.baseURL, '/api/whoami', { token })).status).toBe(401);
    s.app.store.putUser({ ...user, status: 'active' });
    expect((await call(s.baseURL, '/api/whoami', { token })).status).toBe(200);
  });

  const refusals: Array<[string, () => Promise<string>]> = [
    [
      'a wrong audience (issued by the provider)',
      () => clientToken('admin-bot', 'https://other.example/'),
    ],
    ['a wrong issuer', () => mint({ iss: 'http://evil.example' })],
    [
      'an expired token',
      () =>
        mint({
          iat: Math.floor(Date.now() / 1000) - 7200,
          exp: Math.floor(Date.now() / 1000) - 3600,
        }),
    ],
    [
      'a token signed by another key under the same kid',
      async () => mint({}, (await generateKeyPair('RS256')).privateKey),
    ],
    [
      'a token signed by an unknown key',
      async () => mint({}, (await generateKeyPair('RS256')).privateKey, 'other-kid'),
    ],
    [
      'a token without exp',
      async () => {
        const now = Math.floor(Date.now() / 1000);
        return new SignJWT({ sub: 'x' })
          .setProtectedHeader({ alg: 'RS256', kid: KID })
          .setIssuer(issuer)
          .setAudience(AUDIENCE)
          .setIssuedAt(now)
          .sign(privateKey);
      },
    ],
    ['a junk token', async () => 'not.a.jwt'],
  ];
  it.each(refusals)(
    'refuses %s with 401, the error body and the resource_metadata challenge',
    async (_what, token) => {
      const res = await call(s.baseURL, '/api/whoami', { token: await token() });
      expect(res.status).toBe(401);
      expect(json(res.body).code).toBe('unauthenticated');
      expect(res.headers.get('www-authenticate')).toBe(
        `Bearer resource_metadata="${s.baseURL}/.well-known/oauth-protected-resource"`,
      );
    },
  );

  it('serves RFC 9728 protected-resource metadata', async () => {
    const res = await call(s.baseURL, '/.well-known/oauth-protected-resource');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      resource: s.baseURL,
      authorization_servers: [issuer],
      scopes_supported: ['openid', 'profile', 'email'],
      bearer_methods_supported: ['header'],
    });
    const mcp = await call(s.baseURL, '/.well-known/oauth-protected-resource/mcp');
    expect(json(mcp.body).resource).toBe(`${s.baseURL}/mcp`);
    expect((await call(s.baseURL, '/api/auth')).body).toEqual({
      enabled: true,
      mode: 'oidc',
      loginUrl: '',
    });
  });
});

describe('protected-resource metadata outside oidc mode', () => {
  it('is 404 with the error body', async () => {
    const s = await start({ apiKeys: [{ key: 'k-0123456789', name: 'x' }] });
    try {
      const res = await call(s.baseURL, '/.well-known/oauth-protected-resource');
      expect(res.status).toBe(404);
      expect(json(res.body).code).toBe('not_found');
    } finally {
      await s.close();
      removeDir(s.dataDir);
    }
  });
});
