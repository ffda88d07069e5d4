import type { FastifyInstance } from 'fastify';

/**
 * `Content-Type: application/json` with no body is no body, not bad JSON: clients send that header
 * on every POST, suspend and resume included. Routes that need a body still refuse its absence
 * through their schema. Everything else goes to fastify's own parser (prototype poisoning refused).
 */
export function acceptEmptyJson(app: FastifyInstance): void {
  const parse = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    const text = body.toString();
    if (text === '') {
      done(null, undefined);
      return;
    }
    parse(request, text, done);
  });
}
