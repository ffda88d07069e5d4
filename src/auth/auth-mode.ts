import type { FastifyBaseLogger, FastifyReply, FastifyRequest, HTTPMethods } from 'fastify';
import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import type { Config } from '../config/schema.js';
import type { Role, Store } from '../persistence/store.js';

/**
 * The extension API of authentication. A mode is chosen by `auth.mode`; its `verify` runs on every
 * request to a protected path and either returns who is calling or throws a 401 AppError. The auth
 * plugin turns the principal into the request's Identity through the user record (status, role).
 */
export interface AuthMode {
  readonly name: string;
  /** Required: called on every authenticated request. Throw `unauthenticated()` to refuse. */
  verify(context: VerifyContext): Principal | Promise<Principal>;
  /** Where a browser starts logging in; omitted for bearer-only modes. */
  readonly loginUrl?: string;
  /** Public routes of a browser login flow, mounted outside bearer auth; never under /api, /v1, /mcp or /internal/sources. */
  readonly loginRoutes?: readonly LoginRoute[];
  /**
   * The verdict on a bearer token is the token's alone and never expires (API keys): the auth
   * plugin may remember it by the token's digest for `auth.identityCacheTTL`, until its user
   * changes. Not for tokens that expire (JWTs) or modes that read other headers.
   */
  readonly bearerVerdictLasts?: boolean;
  /** When set, `/.well-known/oauth-protected-resource` answers and 401s point MCP clients at it. */
  readonly protectedResource?: { authorizationServers: string[]; scopes: string[] };
}

export interface AuthModeFactory {
  /** The `auth.mode` value that selects this mode. */
  readonly name: string;
  /** Runs once at start; throw ConfigError (one line, naming the key) for a bad configuration. */
  create(context: AuthModeContext): AuthMode | Promise<AuthMode>;
}

export interface AuthModeContext {
  config: Config;
  store: Store;
  log: FastifyBaseLogger;
  /**
   * The address the request's client connected from (never a header the client wrote): the
   * socket's peer, or the client a follower replica served and vouched for; undefined: unknown.
   */
  clientAddress(message: IncomingMessage): string | undefined;
}

export interface VerifyContext {
  /** A control-plane request, or an app host's raw one (a private app's owner, see app-access.ts). */
  request: VerifyRequest;
  /** The bearer token of the request; throws 401 when it is missing or malformed. */
  bearer(): string;
  /** The bearer token's sha256, computed once per request; throws as `bearer`. */
  digest(): Buffer;
}

/** What a mode may read of a request: its headers and its socket. */
export interface VerifyRequest {
  headers: IncomingHttpHeaders;
  raw: IncomingMessage;
}

/** Who a verified credential speaks for. */
export interface Principal {
  userId: string;
  name: string;
  email?: string;
  /** Seeds a new user record; the stored record's role wins unless `roleFromCredential`. */
  role: Role;
  department?: string;
  /** Empty means unrestricted. */
  scopes: string[];
  /** The credential carries the authoritative role (IdP-managed roles, e.g. OIDC claims). */
  roleFromCredential?: boolean;
}

export interface LoginRoute {
  method: HTTPMethods | HTTPMethods[];
  url: string;
  handler(request: FastifyRequest, reply: FastifyReply): unknown;
}
