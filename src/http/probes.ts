import type { FastifyInstance, FastifyRequest } from 'fastify';
import { isAdmin } from '../auth/identity.js';
import { AppError } from '../errors.js';
import type { ComponentStatus } from './readiness.js';

/**
 * Liveness and readiness probes; open to everyone. A component's details (sandbox and cgroup
 * paths, the registry URL, the store backend) map the host for an attacker, so only admins see
 * them; anyone else gets each component's name and whether it is ok.
 */
export async function probesPlugin(app: FastifyInstance): Promise<void> {
  app.get('/healthz', async () => ({ status: 'ok' }));

  app.get('/readyz', async (request) => {
    const report = app.readiness.report();
    const components = (await seesDetails(app, request))
      ? report.components
      : summary(report.components);
    if (!report.ready) throw new AppError(503, 'not_ready', 'not ready yet', { components });
    return { status: 'ready', components };
  });
}

async function seesDetails(app: FastifyInstance, request: FastifyRequest): Promise<boolean> {
  const identity = await app.auth.identify(request);
  return identity !== undefined && isAdmin(identity);
}

function summary(components: Record<string, ComponentStatus>): Record<string, { ok: boolean }> {
  return Object.fromEntries(
    Object.entries(components).map(([name, status]) => [name, { ok: status.ok }]),
  );
}
