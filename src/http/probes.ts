import type { FastifyInstance } from 'fastify';
import { AppError } from '../errors.js';

/** Liveness and readiness probes; open to everyone. */
export async function probesPlugin(app: FastifyInstance): Promise<void> {
  app.get('/healthz', async () => ({ status: 'ok' }));

  app.get('/readyz', async () => {
    const { ready, components } = app.readiness.report();
    if (!ready) throw new AppError(503, 'not_ready', 'not ready yet', { components });
    return { status: 'ready', components };
  });
}
