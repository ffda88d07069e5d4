import type { FastifyInstance, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';

/**
 * Query strings are text; the spec types some of their parameters as integers or booleans. Those
 * (and only those) are converted here, strictly: `10` is an integer, `1e3`, `10.0` and ` 10` are
 * not; `true` and `false` are booleans, nothing else is. What does not convert stays a string and
 * the route's schema (validated without coercion) refuses it with a 400. Bodies are JSON and are
 * never coerced: `{"version": "1"}` is not a version.
 */
export const strictQueryPlugin = fp(async (app: FastifyInstance) => {
  // Only on the routes whose schema types a query parameter: the others pay nothing for it.
  app.addHook('onRoute', (route) => {
    const properties = (route.schema?.querystring as QuerySchema | undefined)?.properties;
    if (!properties) return;
    const convertQuery = (request: FastifyRequest, _reply: unknown, done: () => void): void => {
      convert(request, properties);
      done();
    };
    const existing = route.preValidation;
    route.preValidation = [
      convertQuery,
      ...(existing === undefined ? [] : Array.isArray(existing) ? existing : [existing]),
    ];
  });
});

interface QuerySchema {
  properties?: Record<string, { type?: string | string[] }>;
}

function convert(request: FastifyRequest, properties: NonNullable<QuerySchema['properties']>) {
  const { query } = request;
  if (!isRecord(query)) return;
  for (const [name, value] of Object.entries(query)) {
    const type = properties[name]?.type;
    if (typeof value !== 'string' || typeof type !== 'string') continue;
    if (type === 'integer' && INTEGER.test(value)) query[name] = Number(value);
    else if (type === 'number' && NUMBER.test(value)) query[name] = Number(value);
    else if (type === 'boolean' && (value === 'true' || value === 'false')) {
      query[name] = value === 'true';
    }
  }
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null;

const INTEGER = /^-?(0|[1-9][0-9]*)$/;
const NUMBER = /^-?(0|[1-9][0-9]*)(\.[0-9]+)?$/;
