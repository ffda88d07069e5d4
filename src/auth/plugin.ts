import { timingSafeEqual } from 'node:crypto';
import type { FastifyBaseLogger, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { IncomingMessage } from 'node:http';
import { durationMs } from '../config/schema.js';
import { AppError, unauthenticated } from '../errors.js';
import '../http/types.js';
import { bearerCredential, parseBearer, type BearerCredential } from './bearer.js';
import type { Identity } from './identity.js';
import { IdentityCache } from './identity-cache.js';
import { sha256 } from './keys.js';
import { VerifiedKeys } from './verified-keys.js';
import type { AuthMode, Principal, VerifyRequest } from './auth-mode.js';
import { createAuthMode } from './modes.js';
import { isProtectedForms, pathForms } from './paths.js';
import { loadOrProvision } from './provision.js';

/** What the auth plugin exposes on `app.auth` (global: the plugin is not encapsulated). */
export interface AuthRuntime {
  readonly enabled: boolean;
  /** The active mode's name; `none` when auth is disabled. */
  readonly modeName: string;
  /** Undefined when auth is disabled. */
  readonly mode: AuthMode | undefined;
  /** Drops a user's cached record after a change through /api/users, so it applies at once. */
  forget(userId: string): void;
  /**
   * Exempts requests the predicate accepts from the auth hook entirely. For the app router: a
   * request for `Host: <name>.<apps domain>` is an app's traffic, never the control plane's. The
   * predicate must only accept requests that its owner then serves itself (never the control plane).
   */
  exempt(predicate: (request: FastifyRequest) => boolean): void;
  /**
   * Accepts `token` as the bearer of `identity` for requests under `prefix` only (every reading of
   * the URL must be under it): the in-sandbox agents' one shared token for /internal/sources/.
   */
  serviceToken(prefix: string, token: string, identity: Identity): void;
  /**
   * The caller's identity on an open path (e.g. /readyz, which shows more to admins), or undefined
   * when the credential is missing or invalid: open paths answer either way, never 401.
   */
  identify(request: FastifyRequest): Promise<Identity | undefined>;
  /**
   * The same for a request fastify never sees (an app host's, routed before it): the identity its
   * credential speaks for, or undefined. Auth disabled: everyone is the admin, as everywhere.
   */
  identifyMessage(message: IncomingMessage): Promise<Identity | undefined>;
  /**
   * Whether the request's `Authorization: Bearer` token is a Slipway credential (a key, a token
   * the mode accepts, a service token), whoever it speaks for: such a token is cut from every
   * request an app receives. Unknown when the check itself fails, which counts as yes.
   */
  carriesSlipwayBearer(message: IncomingMessage): Promise<boolean>;
}

declare module 'fastify' {
  interface FastifyInstance {
    auth: AuthRuntime;
  }
}

/** Identity of every request when auth is disabled. */
export const NO_AUTH_IDENTITY: Readonly<Identity> = Object.freeze({
  userId: 'admin',
  name: 'admin',
  role: 'admin',
  scopes: [],
  mode: 'none',
});

/**
 * Authenticates requests to protected paths (spec §5 table, see paths.ts) with the configured mode,
 * turns the principal into `request.identity` through the user record, and mounts the mode's
 * login routes. Registered before any route plugin; its hook applies to the whole server.
 */
async function authPlugin(app: FastifyInstance): Promise<void> {
  const { config, store } = app;
  const enabled = config.auth.enabled;
  const context = { config, store, log: app.log, clientAddress: app.clientAddress };
  const mode = enabled ? await createAuthMode(context) : undefined;
  const cacheTtlMs = durationMs(config.auth.identityCacheTTL);
  const cache = new IdentityCache(cacheTtlMs);
  const verifiedKeys = mode?.bearerVerdictLasts ? new VerifiedKeys(cacheTtlMs) : undefined;
  const exemptions: Array<(request: FastifyRequest) => boolean> = [];
  const serviceTokens: Array<{ prefix: string; digest: Buffer; identity: Identity }> = [];

  const identify = async (
    request: VerifyRequest,
    log: FastifyBaseLogger,
  ): Promise<Identity | undefined> => {
    if (!mode) return { ...NO_AUTH_IDENTITY, scopes: [] };
    try {
      const credential = bearerCredential(request.headers.authorization);
      return await resolveIdentity(mode, await mode.verify({ request, ...credential }), log);
    } catch (err) {
      // An open path must answer even when the identity provider does not: no identity, then.
      if (!(err instanceof AppError && err.status === 401)) {
        log.warn({ err }, 'identifying the caller of an open path failed');
      }
      return undefined;
    }
  };

  app.decorate('auth', {
    enabled,
    modeName: mode?.name ?? 'none',
    mode,
    forget: (userId: string) => {
      cache.forget(userId);
      verifiedKeys?.forget(userId);
    },
    exempt: (predicate: (request: FastifyRequest) => boolean) => {
      exemptions.push(predicate);
    },
    serviceToken: (prefix: string, token: string, identity: Identity) => {
      serviceTokens.push({ prefix, digest: sha256(token), identity });
    },
    identify: async (request: FastifyRequest) => request.identity ?? identify(request, request.log),
    identifyMessage: (message: IncomingMessage) =>
      identify({ headers: message.headers, raw: message }, app.log),
    carriesSlipwayBearer: async (message: IncomingMessage) => {
      const { authorization } = message.headers;
      const credential = bearerCredential(authorization);
      const digest = wellFormedDigest(authorization);
      if (!digest) return false;
      if (serviceTokens.some((entry) => timingSafeEqual(digest, entry.digest))) return true;
      if (!mode) return false;
      if (verifiedKeys?.get(digest)) return true;
      try {
        // The bearer alone, so that a mode reading other headers (a trusted proxy's user header)
        // cannot claim an app's own Authorization as Slipway's.
        const request = { headers: { authorization }, raw: message };
        await mode.verify({ request, ...credential });
        return true;
      } catch (err) {
        if (err instanceof AppError && err.status === 401) return false;
        app.log.warn({ err }, 'checking an app request for a Slipway credential failed');
        return true;
      }
    },
  } satisfies AuthRuntime);

  for (const route of mode?.loginRoutes ?? []) {
    app.route({ method: route.method, url: route.url, handler: route.handler });
  }

  const isExempt = (request: FastifyRequest): boolean =>
    exemptions.some((predicate) => {
      try {
        return predicate(request);
      } catch (err) {
        // Fail closed: a broken exemption must not open the control plane.
        request.log.error({ err }, 'auth exemption predicate failed');
        return false;
      }
    });

  const resolveIdentity = async (
    active: AuthMode,
    principal: Principal,
    log: FastifyBaseLogger,
  ) => {
    let record = cache.get(principal.userId);
    if (!record) {
      record = await loadOrProvision(store, principal, {
        onRetry: (err, attempt) => log.warn({ err, attempt }, 'user provisioning failed; retrying'),
      });
      cache.set(record);
    }
    if (record.status !== 'active') throw unauthenticated('user is suspended');
    const identity: Identity = {
      userId: record.id,
      name: record.name,
      role: principal.roleFromCredential ? principal.role : record.role,
      scopes: principal.scopes,
      mode: active.name,
    };
    const email = record.email ?? principal.email;
    if (email) identity.email = email;
    if (record.department) identity.department = record.department;
    return identity;
  };

  const verify = async (
    active: AuthMode,
    request: FastifyRequest,
    credential: BearerCredential,
  ) => {
    const principal = await active.verify({ request, ...credential });
    const identity = await resolveIdentity(active, principal, request.log);
    verifiedKeys?.set(credential.digest(), identity, cache.remainingMs(identity.userId));
    request.identity = identity;
  };

  const refuse = (request: FastifyRequest, reply: FastifyReply, err: unknown): Error => {
    if (err instanceof AppError && err.status === 401 && mode) {
      void reply.header('www-authenticate', challenge(mode, config.server.baseURL, request));
    }
    return err as Error;
  };

  // A callback hook, not an async one, that reads the URL's forms and hashes the bearer once: a
  // request whose key was verified lately (most of them) is let through with no promise and no
  // closure.
  app.addHook('onRequest', (request, reply, done) => {
    if (!mode) {
      request.identity = { ...NO_AUTH_IDENTITY, scopes: [] };
      return done();
    }
    if (isExempt(request)) return done();
    const forms = pathForms(request.url);
    if (!isProtectedForms(forms)) return done();
    const { authorization } = request.headers;
    const digest = authorization === undefined ? undefined : wellFormedDigest(authorization);
    const service = digest && serviceIdentity(serviceTokens, forms, digest);
    if (service) {
      request.identity = { ...service, scopes: [...service.scopes] };
      return done();
    }
    const known = digest && verifiedKeys?.get(digest);
    if (known) {
      request.identity = known;
      return done();
    }
    // Not remembered (or no well-formed bearer: the mode answers that with its own 401).
    verify(mode, request, bearerCredential(authorization)).then(
      () => done(),
      (err: unknown) => done(refuse(request, reply, err)),
    );
  });
}

// Not encapsulated (what fastify-plugin does): the hook and `app.auth` must reach every route.
Object.defineProperty(authPlugin, Symbol.for('skip-override'), { value: true });
Object.defineProperty(authPlugin, Symbol.for('fastify.display-name'), { value: 'slipway-auth' });
export { authPlugin };

/** The bearer's digest, or undefined when the header is not a well-formed bearer token. */
function wellFormedDigest(authorization: string | string[] | undefined): Buffer | undefined {
  try {
    return sha256(parseBearer(authorization));
  } catch (err) {
    if (err instanceof AppError && err.status === 401) return undefined;
    throw err;
  }
}

/**
 * The identity of a service token presented under its prefix (every form of the URL), compared
 * in constant time with each token.
 */
function serviceIdentity(
  tokens: ReadonlyArray<{ prefix: string; digest: Buffer; identity: Identity }>,
  forms: readonly string[],
  digest: Buffer,
): Identity | undefined {
  let found: Identity | undefined;
  for (const entry of tokens) {
    const matches = timingSafeEqual(digest, entry.digest);
    if (matches && forms.every((form) => form.startsWith(entry.prefix))) found = entry.identity;
  }
  return found;
}

/**
 * RFC 6750 challenge; in modes with resource metadata it points MCP clients at RFC 9728 metadata.
 * On /mcp it names the metadata of the /mcp resource itself, with its scopes: an MCP client asks
 * its authorization server for a token for that resource (MCP authorization spec).
 */
function challenge(mode: AuthMode, baseURL: string | undefined, request: FastifyRequest): string {
  const info = mode.protectedResource;
  if (!info) return 'Bearer';
  const metadata = `${publicBaseURL(baseURL, request)}/.well-known/oauth-protected-resource`;
  if (!isMcpRoute(request)) return `Bearer resource_metadata="${metadata}"`;
  const scope = info.scopes.length > 0 ? `, scope="${info.scopes.join(' ')}"` : '';
  return `Bearer resource_metadata="${metadata}/mcp"${scope}`;
}

const isMcpRoute = (request: FastifyRequest): boolean =>
  request.routeOptions.url === '/mcp' || request.routeOptions.url === '/mcp/';

/** `server.baseURL`, else the URL the caller used (Host restricted to host characters). */
export function publicBaseURL(baseURL: string | undefined, request: FastifyRequest): string {
  if (baseURL) return baseURL.replace(/\/+$/, '');
  const host = /^[A-Za-z0-9.:[\]-]{1,255}$/.test(request.host) ? request.host : 'localhost';
  return `${request.protocol}://${host}`;
}
