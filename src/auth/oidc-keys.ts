import { createRemoteJWKSet, type JWTVerifyGetKey } from 'jose';

/**
 * The issuer's signing keys, found lazily: from `jwksURL` when configured, else through the issuer's
 * discovery document. A failed discovery is forgotten, so the next request tries again; the server
 * therefore starts (and heals) even while the identity provider is briefly down.
 */
export function issuerKeys(issuer: string, jwksURL: string | undefined): IssuerKeys {
  let jwks = jwksURL ? createRemoteJWKSet(new URL(jwksURL)) : undefined;
  let pending: Promise<JWTVerifyGetKey> | undefined;

  const resolve = (): Promise<JWTVerifyGetKey> => {
    if (jwks) return Promise.resolve(jwks);
    pending ??= discoverJwksURL(issuer).then(
      (url) => {
        jwks = createRemoteJWKSet(url);
        return jwks;
      },
      (err: unknown) => {
        pending = undefined;
        throw err;
      },
    );
    return pending;
  };

  return {
    getKey: async (header, token) => (await resolve())(header, token),
    warmUp: async () => {
      await resolve();
    },
  };
}

export interface IssuerKeys {
  /** Key resolver for `jwtVerify`. Rejects with a non-JOSE error when the provider is unreachable. */
  getKey: JWTVerifyGetKey;
  /** Resolves the JWKS location now (start-up), so the first request does not wait for it. */
  warmUp(): Promise<void>;
}

/** Thrown when discovery fails: the provider is down or misconfigured, not the caller's token. */
export class DiscoveryError extends Error {
  override name = 'DiscoveryError';
}

async function discoverJwksURL(issuer: string): Promise<URL> {
  const url = `${issuer.replace(/\/+$/, '')}/.well-known/openid-configuration`;
  let response: Response;
  try {
    response = await fetch(url, { signal: AbortSignal.timeout(5000), redirect: 'error' });
  } catch (err) {
    throw new DiscoveryError(`OIDC discovery at ${url} failed: ${(err as Error).message}`);
  }
  if (!response.ok)
    throw new DiscoveryError(`OIDC discovery at ${url} answered ${response.status}`);
  const doc = (await response.json().catch((err: unknown) => {
    throw new DiscoveryError(`OIDC discovery at ${url} is not JSON: ${(err as Error).message}`);
  })) as { issuer?: unknown; jwks_uri?: unknown };
  // OIDC Discovery §4.3: a document naming another issuer must not be used.
  if (doc.issuer !== issuer) {
    throw new DiscoveryError(
      `OIDC discovery at ${url} names issuer ${String(doc.issuer)}, not ${issuer}`,
    );
  }
  if (typeof doc.jwks_uri !== 'string')
    throw new DiscoveryError(`OIDC discovery at ${url} has no jwks_uri`);
  return new URL(doc.jwks_uri);
}
