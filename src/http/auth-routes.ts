import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { requireIdentity } from '../auth/guards.js';
import '../auth/plugin.js';
import { publicBaseURL } from '../auth/plugin.js';
import { AppError } from '../errors.js';
import * as api from './api-schemas.js';

/**
 * `GET /api/auth` (public: which mode, where to log in), `GET /api/whoami` (the caller) and the
 * RFC 9728 protected-resource metadata MCP clients use to find the authorization server.
 */
export async function authRoutes(app: FastifyInstance): Promise<void> {
  const dashboard = dashboardOidc(app);
  app.get('/api/auth', { schema: api.getAuthInfo }, async () => ({
    enabled: app.auth.enabled,
    mode: app.auth.modeName,
    loginUrl: app.auth.mode?.loginUrl ?? '',
    ...(dashboard ? { oidc: dashboard } : {}),
  }));

  app.get('/api/whoami', { schema: api.whoami }, async (request) => {
    const identity = requireIdentity(request);
    return {
      user_id: identity.userId,
      name: identity.name,
      ...(identity.email ? { email: identity.email } : {}),
      role: identity.role,
      ...(identity.department ? { department: identity.department } : {}),
      scopes: identity.scopes,
      mode: identity.mode,
    };
  });

  // RFC 9728 §3.1: metadata of a resource with a path lives under the well-known suffix + path.
  const metadata = (request: FastifyRequest<{ Params: { '*'?: string } }>, reply: FastifyReply) => {
    const info = app.auth.mode?.protectedResource;
    if (!info)
      throw new AppError(404, 'not_found', 'no protected-resource metadata: auth.mode is not oidc');
    const suffix = request.params['*'] ? `/${request.params['*']}` : '';
    void reply.header('cache-control', 'public, max-age=300');
    return {
      resource: `${publicBaseURL(app.config.server.baseURL, request)}${suffix}`,
      authorization_servers: info.authorizationServers,
      scopes_supported: info.scopes,
      bearer_methods_supported: ['header'],
    };
  };
  app.get(
    '/.well-known/oauth-protected-resource',
    { schema: api.getProtectedResourceMetadata },
    metadata,
  );
  // A wildcard, not the spec's `{resource_path}`: a resource's path may have several segments.
  const { response } = api.getProtectedResourceMetadataForPath;
  app.get('/.well-known/oauth-protected-resource/*', { schema: { response } }, metadata);
}

/**
 * What the dashboard needs for a browser sign-in (Authorization Code with PKCE): all public, the
 * client has no secret. Only in oidc mode with `auth.oidc.dashboardClientId` set.
 */
function dashboardOidc(app: FastifyInstance) {
  const { oidc } = app.config.auth;
  if (app.auth.modeName !== 'oidc' || !oidc.issuer || !oidc.dashboardClientId) return undefined;
  return {
    issuer: oidc.issuer,
    client_id: oidc.dashboardClientId,
    scopes: oidc.scopes,
    audience: oidc.audience ?? '',
  };
}
