import { errors, jwtVerify, type JWTPayload } from 'jose';
import { ConfigError } from '../config/load.js';
import type { Config } from '../config/schema.js';
import { AppError, unauthenticated } from '../errors.js';
import type { AuthMode, AuthModeFactory, Principal } from './auth-mode.js';
import { issuerKeys } from './oidc-keys.js';
import { checkUserId } from './user-id.js';

/**
 * OIDC: bearer tokens are JWTs from `auth.oidc.issuer`, checked against its JWKS for signature,
 * issuer, audience, algorithm and expiry. Roles come from the token on every request.
 */
export const oidcMode: AuthModeFactory = {
  name: 'oidc',
  create: ({ config, log }): AuthMode => {
    const oidc = checkOidcConfig(config);
    const keys = issuerKeys(oidc.issuer, oidc.jwksURL);
    keys
      .warmUp()
      .catch((err: unknown) =>
        log.warn(
          { err: (err as Error).message },
          'OIDC provider not reachable yet; will retry on demand',
        ),
      );
    return {
      name: 'oidc',
      protectedResource: { authorizationServers: [oidc.issuer], scopes: oidc.scopes },
      verify: async (context) => {
        const token = context.bearer();
        let payload: JWTPayload;
        try {
          ({ payload } = await jwtVerify(token, keys.getKey, {
            issuer: oidc.issuer,
            audience: oidc.audience,
            algorithms: oidc.algorithms,
            requiredClaims: ['exp'],
            clockTolerance: 5,
          }));
        } catch (err) {
          throw verifyError(err, (e) => log.warn({ err: e.message }, 'cannot verify OIDC tokens'));
        }
        return principalFromClaims(payload, oidc);
      },
    };
  },
};

type OidcConfig = Config['auth']['oidc'] & { issuer: string; audience: string };

function checkOidcConfig(config: Config): OidcConfig {
  const oidc = config.auth.oidc;
  if (!oidc.issuer)
    throw new ConfigError('config: auth.oidc.issuer is required when auth.mode is oidc');
  if (!oidc.audience)
    throw new ConfigError('config: auth.oidc.audience is required when auth.mode is oidc');
  for (const [key, value] of [
    ['issuer', oidc.issuer],
    ['jwksURL', oidc.jwksURL],
  ] as const) {
    if (value !== undefined && !/^https?:\/\/[^\s]+$/.test(value)) {
      throw new ConfigError(`config: auth.oidc.${key} must be an http(s) URL`);
    }
  }
  if (
    oidc.algorithms.length === 0 ||
    oidc.algorithms.some((a) => a === 'none' || a.startsWith('HS'))
  ) {
    throw new ConfigError(
      'config: auth.oidc.algorithms must list asymmetric algorithms only (RS256, ES256, ...)',
    );
  }
  return { ...oidc, issuer: oidc.issuer, audience: oidc.audience };
}

/** A JOSE failure is the token's fault (401); anything else means the provider is unreachable (503). */
function verifyError(err: unknown, logProviderError: (err: Error) => void): AppError {
  if (err instanceof errors.JWTExpired) return unauthenticated('token has expired');
  if (err instanceof errors.JWTClaimValidationFailed) {
    return unauthenticated(`token ${err.claim} claim is not accepted`);
  }
  const providerFault =
    !(err instanceof errors.JOSEError) ||
    err instanceof errors.JWKSTimeout ||
    err instanceof errors.JWKSInvalid ||
    err.code === 'ERR_JOSE_GENERIC';
  if (providerFault) {
    logProviderError(err instanceof Error ? err : new Error(String(err)));
    return new AppError(503, 'not_ready', 'the identity provider is not reachable; try again');
  }
  return unauthenticated('invalid token');
}

function principalFromClaims(payload: JWTPayload, oidc: OidcConfig): Principal {
  const userId = text(claimAt(payload, oidc.usernameClaim)) ?? text(payload.sub);
  if (!userId) throw unauthenticated('token names no user');
  checkUserId(userId);
  const roles = strings(claimAt(payload, oidc.roleClaim));
  const email = text(claimAt(payload, oidc.emailClaim));
  return {
    userId,
    name: text(payload.name) ?? userId,
    ...(email ? { email } : {}),
    role: roles.includes(oidc.adminRole) ? 'admin' : 'user',
    // Token scopes (openid, profile, ...) are not Slipway scopes; empty means unrestricted.
    scopes: [],
    roleFromCredential: true,
  };
}

/** A claim by name, or by dotted path into nested objects (`realm_access.roles`). */
export function claimAt(payload: Record<string, unknown>, path: string): unknown {
  if (path in payload) return payload[path];
  let node: unknown = payload;
  for (const part of path.split('.')) {
    if (typeof node !== 'object' || node === null || Array.isArray(node)) return undefined;
    node = (node as Record<string, unknown>)[part];
  }
  return node;
}

const text = (value: unknown): string | undefined =>
  typeof value === 'string' && value !== '' ? value : undefined;

const strings = (value: unknown): string[] => {
  if (typeof value === 'string') return [value];
  return Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string') : [];
};
