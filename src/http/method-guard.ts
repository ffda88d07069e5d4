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
 * A known path asked with a method it does not take is `405 method_not_allowed` with `Allow`
 * (RFC 9110 §15.5.6), not a 404 that says the path is not there. Registered before auth: the
 * answer says nothing the published spec does not, and a wrong method needs no credentials to
 * be told so.
 */
export const methodGuardPlugin = fp(async (app: FastifyInstance) => {
  app.addHook('onRequest', async (request, reply) => {
    if (!request.is404) return;
    const path = request.url.split('?', 1)[0] ?? '';
    const allowed = METHODS.filter((method) => app.findRoute({ method, url: path }) !== null);
    if (allowed.length === 0) return;
    void reply.header('allow', allowed.join(', '));
    throw new AppError(
      405,
      'method_not_allowed',
      `${request.method} is not allowed on ${path}; use ${allowed.join(' or ')}`,
    );
  });
});
