import type { FastifyInstance } from 'fastify';

/**
 * JSON is the only body the API reads (deploys read multipart in their own plugin). fastify also
 * reads `text/plain` as a string, which a JSON route then refused as a wrongly typed body (400):
 * without that parser every other type is one rule, `415 unsupported_media_type`.
 *
 * `Content-Type: application/json` with no body is no body, not bad JSON: clients send that header
 * on every POST, suspend and resume included. Routes that need a body still refuse its absence
 * through their schema. Everything else goes to fastify's own parser (prototype poisoning refused).
 */
export function readJsonOnly(app: FastifyInstance): void {
  app.removeContentTypeParser('text/plain');
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
