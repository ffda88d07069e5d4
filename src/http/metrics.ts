import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';

/** Counts and times every request (hence not encapsulated); serves `/metrics`. */
export const metricsPlugin = fp(async function metrics(app: FastifyInstance): Promise<void> {
  const { metrics } = app;
  app.addHook('onResponse', (request, reply, done) => {
    // Unmatched URLs share one label so a scanner cannot blow up the series count.
    const route = request.routeOptions.url ?? 'unmatched';
    const labels = { method: request.method, route, status: String(reply.statusCode) };
    metrics.httpRequests.inc(labels);
    metrics.httpDuration.observe(labels, reply.elapsedTime / 1000);
    done();
  });

  app.get('/metrics', async (_request, reply) => {
    const text = await metrics.registry.metrics();
    return reply.type(metrics.registry.contentType).send(text);
  });
});
