import type { JsonSchemaToTsProvider } from '@fastify/type-provider-json-schema-to-ts';
import { randomBytes } from 'node:crypto';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { requireIdentity } from '../auth/guards.js';
import { AppError } from '../errors.js';
import type { ShareService } from '../services/share-links.js';
import * as api from './api-schemas.js';
import { renderSharePage, sharePageHeaders, type SharePage } from './share-page.js';
import { passwordOf } from './share-schemas.js';

/**
 * Share links (spec §4): creation and listing under /v1/apps/{id}, the public resolve under
 * /api/share/{token} (open by the auth plugin's path table), revoke, and the public page with
 * its way into a private app.
 */
export function shareRoutes(shares: ShareService) {
  return async function routes(fastify: FastifyInstance): Promise<void> {
    const app = fastify.withTypeProvider<JsonSchemaToTsProvider>();
    app.post('/v1/apps/:id/share-links', { schema: api.createShareLink }, async (request) =>
      // The service validates the body: the MCP tools hand it the same unchecked input.
      shares.create(requireIdentity(request), request.params.id, request.body),
    );

    app.get('/v1/apps/:id/share-links', { schema: api.listShareLinks }, async (request) =>
      shares.list(requireIdentity(request), request.params.id, request.query),
    );

    app.get('/api/share/:token', { schema: api.resolveShareLink }, async (request) =>
      shares.resolve(request.params.token),
    );

    app.post('/api/share/:token', { schema: api.unlockShareLink }, async (request) =>
      shares.resolve(request.params.token, passwordOf(request.body), request.ip),
    );

    app.delete(
      '/api/share-links/:token',
      { schema: api.revokeShareLink },
      async (request, reply) => {
        shares.revoke(requireIdentity(request), request.params.token);
        return reply.status(204).send();
      },
    );

    // The pages are not the API, but their token is the API's.
    const pageSchema = { params: api.resolveShareLink.params };
    app.get('/share/:token', { schema: pageSchema }, async (request, reply) =>
      sendPage(reply, pageFor(shares, request.params.token)),
    );

    // The page's "Open" of an open link: a private app's code is minted now, when it is used.
    app.get('/share/:token/open', { schema: pageSchema }, async (request, reply) => {
      const token = request.params.token;
      let target: string | undefined;
      try {
        target = shares.open(token);
      } catch (err) {
        if (!(err instanceof AppError && err.code === 'password_required')) {
          return sendPage(reply, errorPage(err));
        }
      }
      // A protected link, or an app not live yet: its page asks for the password or says so.
      const location = target ?? `/share/${token}`;
      return reply
        .status(303)
        .headers({ location, 'cache-control': 'no-store', 'referrer-policy': 'no-referrer' })
        .send();
    });
  };
}

/** The page for a token; an AppError (gone, unavailable) becomes an HTML page with its status. */
function pageFor(shares: ShareService, token: string): { status: number; page: SharePage } {
  try {
    const state = shares.peek(token);
    if (state.kind === 'open') return { status: 200, page: { ...state, token } };
    const nonce = randomBytes(16).toString('base64');
    return { status: 200, page: { kind: 'protected', name: state.name, token, nonce } };
  } catch (err) {
    return errorPage(err);
  }
}

function errorPage(err: unknown): { status: number; page: SharePage } {
  if (!(err instanceof AppError)) throw err;
  if (err.status === 404) {
    const message = 'This share link does not exist, has expired or was revoked.';
    return { status: 404, page: { kind: 'error', title: 'Link not found', message } };
  }
  return {
    status: err.status,
    page: { kind: 'error', title: 'Share link unavailable', message: err.message },
  };
}

function sendPage(reply: FastifyReply, { status, page }: { status: number; page: SharePage }) {
  const nonce = page.kind === 'protected' ? page.nonce : undefined;
  return reply.status(status).headers(sharePageHeaders(nonce)).send(renderSharePage(page));
}
