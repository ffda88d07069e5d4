import type { FastifyInstance, HTTPMethods } from 'fastify';
import fp from 'fastify-plugin';
import { AppError } from '../errors.js';

const METHODS: readonly HTTPMethods[] = [
  'GET',
  'HEAD',
  'POST',
  'PUT',
  'PATCH',
  'DELETE',
  'OPTIONS',
];

/**
 * The longest path parameter the router reads (after percent-decoding): longer is `414`. User ids
 * may be 255 characters (OIDC subjects), percent-encoded several times longer.
 */
export const MAX_PARAM_LENGTH = 2_048;

/**
 * A known path asked with a method it does not take is `405 method_not_allowed` with `Allow`
 * (RFC 9110 §15.5.6), not a 404 that says the path is not there. Registered before every other
 * guard (the foreign-host and origin checks, auth): the answer says nothing the published spec
 * does not and changes nothing, and a wrong method needs no credentials to be told so.
 */
export const methodGuardPlugin = fp(async (app: FastifyInstance) => {
  // A callback hook (a throw in it is the hook's error): no promise for the requests it lets by.
  app.addHook('onRequest', (request, reply, done) => {
    if (!request.is404) return done();
    const path = request.url.split('?', 1)[0] ?? '';
    const probe = withShortSegments(path);
    const allowed = METHODS.filter((method) => app.findRoute({ method, url: probe }) !== null);
    if (allowed.length === 0) return done();
    void reply.header('allow', allowed.join(', '));
    throw new AppError(
      405,
      'method_not_allowed',
      `${request.method} is not allowed on ${path}; use ${allowed.join(' or ')}`,
    );
  });
});

/**
 * The router "finds" a path with an over-long parameter under every method that has a parameter
 * there (it routes them all to its 414), which would list methods the path does not take. Such a
 * segment is looked up as a short one: which methods take the path does not depend on its length.
 */
function withShortSegments(path: string): string {
  return path
    .split('/')
    .map((segment) => (segment.length > MAX_PARAM_LENGTH ? 'x' : segment))
    .join('/');
}
