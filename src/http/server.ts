import Fastify, { type FastifyInstance } from 'fastify';
import type { Config } from '../config/schema.js';
import type { Store } from '../persistence/store.js';
import { authPlugin } from '../auth/plugin.js';
import { authRoutes } from './auth-routes.js';
import { departmentsRoutes } from './departments-routes.js';
import { docsPlugin } from './docs.js';
import { installErrorHandlers } from './errors.js';
import { Metrics, metricsPlugin } from './metrics.js';
import { probesPlugin } from './probes.js';
import { usersRoutes } from './users-routes.js';
import { Readiness } from './readiness.js';
import { installRouteTable } from './route-table.js';
import type { TlsMaterial } from './tls.js';
import './types.js';

export interface ServerOptions {
  config: Config;
  store: Store;
  tls?: TlsMaterial;
  /** Pino logger settings; false silences it (tests). */
  logger?: boolean | { level: string };
}

/** Builds the control-plane server with every plugin registered; the caller listens. */
export async function buildServer(options: ServerOptions): Promise<FastifyInstance> {
  const { config, store } = options;
  const app = Fastify({
    logger: loggerOptions(options.logger ?? { level: 'info' }),
    bodyLimit: config.server.bodyLimitBytes,
    ...(options.tls ? { https: { key: options.tls.key, cert: options.tls.cert } } : {}),
    trustProxy: false,
    forceCloseConnections: true,
  }) as unknown as FastifyInstance;
  installRouteTable(app);

  app.decorate('config', config);
  app.decorate('store', store);
  app.decorate('metrics', new Metrics());
  app.decorate('readiness', new Readiness());
  app.readiness.register('store', () => ({ ok: store.ping(), backend: store.backend }));

  installErrorHandlers(app);
  // Auth before any route plugin: its onRequest hook guards every protected path.
  await app.register(authPlugin);
  await app.register(metricsPlugin);
  await app.register(probesPlugin);
  await app.register(docsPlugin);
  await app.register(authRoutes);
  await app.register(usersRoutes);
  await app.register(departmentsRoutes);

  return app;
}

function loggerOptions(logger: boolean | { level: string }): object | boolean {
  if (logger === false) return false;
  const level = logger === true ? 'info' : logger.level;
  // Credentials never reach the log, whatever route or plugin logs a request.
  return {
    level,
    redact: {
      paths: ['req.headers.authorization', 'req.headers.cookie', 'headers.authorization'],
      censor: '[redacted]',
    },
  };
}
