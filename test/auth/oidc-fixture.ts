import { createServer as createNetServer } from 'node:net';
import type { JWK } from 'jose';
import Provider from 'oidc-provider';

export const AUDIENCE = 'https://slipway.test/api';
export const KID = 'provider-key';

/** Access tokens for AUDIENCE (or the resource asked for) as RFC 9068 JWTs. */
const JWT_FOR_AUDIENCE = {
  enabled: true,
  defaultResource: () => AUDIENCE,
  useGrantedResource: () => true,
  getResourceServerInfo: (_ctx: unknown, resource: string) => ({
    scope: 'deploy',
    audience: resource,
    accessTokenFormat: 'jwt',
    accessTokenTTL: 300,
    jwt: { sign: { alg: 'RS256' } },
  }),
};

/** A real oidc-provider issuing RFC 9068 JWT access tokens (client_credentials + resource indicators). */
export function makeProvider(issuer: string, jwk: JWK): Provider {
  const client = (id: string) => ({
    client_id: id,
    client_secret: `${id}-secret`,
    grant_types: ['client_credentials'],
    redirect_uris: [],
    response_types: [],
  });
  return new Provider(issuer, {
    clients: [client('admin-bot'), client('plain-bot')],
    jwks: { keys: [jwk] },
    ttl: { ClientCredentials: 300 },
    features: {
      devInteractions: { enabled: false },
      clientCredentials: { enabled: true },
      resourceIndicators: JWT_FOR_AUDIENCE,
    },
    extraTokenClaims: (_ctx: unknown, token: { clientId?: string }) => ({
      email: `${token.clientId}@example.com`,
      realm_access: {
        roles: token.clientId === 'admin-bot' ? ['slipway-admin', 'viewer'] : ['viewer'],
      },
    }),
  });
}

/**
 * A provider with `clientId` as a public client (Authorization Code + PKCE, no secret), its own
 * login and consent pages, and the same JWT access tokens; the account `dana` gets role admin.
 */
export function makeDashboardProvider(
  issuer: string,
  clientId: string,
  redirectUri: string,
  jwk: JWK,
): Provider {
  return new Provider(issuer, {
    clients: [
      {
        client_id: clientId,
        token_endpoint_auth_method: 'none',
        redirect_uris: [redirectUri],
        grant_types: ['authorization_code'],
        response_types: ['code'],
      },
    ],
    jwks: { keys: [jwk] },
    features: {
      devInteractions: { enabled: true },
      resourceIndicators: JWT_FOR_AUDIENCE,
    },
    extraTokenClaims: (_ctx: unknown, token: { accountId?: string }) => ({
      roles: token.accountId === 'dana' ? ['admin'] : [],
    }),
  });
}

export async function freePort(): Promise<number> {
  const probe = createNetServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const address = probe.address();
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  if (typeof address !== 'object' || !address) throw new Error('no port');
  return address.port;
}
