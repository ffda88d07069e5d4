import Fastify, { LogController, type FastifyInstance } from 'fastify';
import {
  createServer as createHttpServer,
  type IncomingMessage,
  type ServerResponse,
} from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { Logger } from 'pino';
import type { AppRouter } from '../app-hosts/app-router.js';
import { AdminAudit } from '../services/admin-audit.js';
import type { DeployServices } from '../services/compose.js';
import type { Config } from '../config/schema.js';
import type { Store } from '../persistence/store.js';
import { authPlugin } from '../auth/plugin.js';
import { authRoutes } from './auth-routes.js';
import { dashboardRoutes } from './dashboard-routes.js';
import { departmentsRoutes } from './departments-routes.js';
import { docsPlugin } from './docs.js';
import { answerClientError } from './client-errors.js';
import { frameworkError, installErrorHandlers } from './errors.js';
import { readJsonOnly } from './json-only.js';
import { MAX_PARAM_LENGTH, methodGuardPlugin } from './method-guard.js';
import { strictQueryPlugin } from './strict-query.js';
import { Metrics } from '../metrics.js';
import { metricsPlugin } from './metrics.js';
import { probesPlugin } from './probes.js';
import { usersRoutes } from './users-routes.js';
import { appsRoutes } from './apps-routes.js';
import { sourcesRoutes } from './sources-routes.js';
import { templatesRoutes } from './templates-routes.js';
import { versionsRoutes } from './versions-routes.js';
import { logsRoutes } from './logs-routes.js';
import { eventsRoutes } from './events-routes.js';
import { auditRoutes } from './audit-routes.js';
import { shareRoutes } from './share-routes.js';
import { Readiness } from './readiness.js';
import { installRouteTable } from './route-table.js';
import { mcpRoutes } from '../mcp/plugin.js';
import type { TlsMaterial } from './tls.js';
import type { Identity } from '../auth/identity.js';
import { durationMs } from '../config/schema.js';
import { guardConnections, headerTimeouts, type HeadDelivered } from './connection-guard.js';
import { hostGuardPlugin } from './host-guard.js';
import { originGuardPlugin } from './origin-guard.js';
import { oversizePlugin } from './oversize.js';
import { StreamCap } from './stream-quota.js';
import { Drain } from './drain.js';
import { installRequestLog } from './request-log.js';
import type { Forwarder } from '../cluster/leader-forward.js';
import './types.js';

export interface ServerOptions {
  config: Config;
  /** The store as opened (its ping is the readiness check); routes write through `deploy.store`. */
  store: Store;
  /** The deploy side, built by the composition root (start.ts). */
  deploy: DeployServices;
  /** The path to apps: the listener hands it every request for an app's host, before fastify. */
  router: AppRouter;
  /** Shared with the path to apps, which counts its requests there; one is made when not given. */
  metrics?: Metrics;
  tls?: TlsMaterial;
  /** The control plane's logger (logging.ts), shared with the services. */
  logger: Logger;
  /** The listener's clean stop (see drain.ts); the caller runs it. One is made when not given. */
  drain?: Drain;
  /** How often the aggregated `http requests` line is written; tests shorten it. */
  requestLogIntervalMs?: number;
  /** A follower replica's: hands requests to the leader before this server sees them. */
  forward?: Forwarder;
}

/** Builds the control-plane server with every plugin registered; the caller listens. */
export async function buildServer(options: ServerOptions): Promise<FastifyInstance> {
  const { config, store, deploy, router } = options;
  const drain = options.drain ?? new Drain();
  const app = Fastify({
    loggerInstance: options.logger,
    bodyLimit: config.server.bodyLimitBytes,
    trustProxy: false,
    // fastify's two info lines per request were most of the log under load: ours go to debug,
    // with one aggregated info line a minute (request-log.ts).
    logController: new LogController({ disableRequestLogging: true }),
    // Bodies are never coerced ("1" is not a version); query strings are converted strictly by
    // strict-query.ts, and only where the spec types them. A field the spec's schema closes out
    // is refused (400), never dropped silently.
    ajv: { customOptions: { coerceTypes: false, removeAdditional: false } },
    // The routes' schemas bound each parameter and answer a 400 in the error envelope.
    routerOptions: { maxParamLength: MAX_PARAM_LENGTH },
    // HEAD is served where the spec names it (source blobs), not on every GET.
    exposeHeadRoutes: false,
    // No wall-clock limit on a plugin's start (fastify's default is 10 s): every plugin here is an
    // async function, not one that could forget its callback, and its work is CPU, which a busy
    // machine stretches without bound (the docs plugin's 0.4 s took over 10 s beside a CPU hog).
    pluginTimeout: 0,
    frameworkErrors: frameworkError,
    clientErrorHandler: answerClientError,
    // By the time fastify closes, the drain has answered or cut every request (drain.ts): what
    // is left is closed rather than waited for.
    forceCloseConnections: true,
    serverFactory: (handler) =>
      listenerFor(options.tls, handler, router, config, drain, options.forward),
  }) as unknown as FastifyInstance;
  installRouteTable(app);
  installRequestLog(app, { intervalMs: options.requestLogIntervalMs });

  app.decorate('config', config);
  // Routes write through the guarded store: a full or read-only disk is a 503, not a 500.
  app.decorate('store', deploy.store);
  app.decorate('metrics', options.metrics ?? new Metrics());
  app.decorate('readiness', new Readiness());
  // Ready means able to write, not just to read: a full disk is not ready.
  app.readiness.register('store', () => {
    const writes = deploy.storage.check('database');
    return { ...writes, ok: writes.ok && store.ping(), backend: store.backend };
  });
  app.decorate('deploy', deploy);
  app.decorate(
    'clientAddress',
    options.forward
      ? options.forward.clientAddress
      : (message: IncomingMessage) => message.socket.remoteAddress,
  );
  app.readiness.register('sources', () => {
    const writes = deploy.storage.check('source store');
    return { ...writes, ok: writes.ok && deploy.sourceStore.ping() };
  });
  app.readiness.register('runtime', () => deploy.runtimeReadiness());

  installErrorHandlers(app);
  readJsonOnly(app);
  // Every handler runs as its request: a change it commits is owed its answer (commit-gate.ts).
  app.addHook('preHandler', (_request, reply, done) => deploy.commits.serving(reply.raw, done));
  // Before every other guard: a wrong method on a known path is 405 whoever asks, from wherever.
  await app.register(methodGuardPlugin);
  if (!config.auth.enabled) await app.register(hostGuardPlugin({ extraHosts: extraHosts(config) }));
  await app.register(
    originGuardPlugin({
      authEnabled: config.auth.enabled,
      isAppHost: (host) => deploy.urls.appForHost(host) !== undefined,
    }),
  );
  await app.register(
    oversizePlugin({
      maxDrainBytes: 2 * config.limits.maxSourceBytes,
      closeMark: () => drain.closeMark,
    }),
  );
  await app.register(strictQueryPlugin);
  // Auth before any route plugin: its onRequest hook guards every protected path.
  await app.register(authPlugin);
  app.auth.serviceToken('/internal/sources/', deploy.agentToken, AGENT_IDENTITY);
  await app.register(metricsPlugin);
  await app.register(probesPlugin);
  await app.register(docsPlugin);
  await app.register(authRoutes);
  await app.register(dashboardRoutes);
  const adminAudit = new AdminAudit(deploy.apps.audit);
  await app.register(usersRoutes(adminAudit));
  await app.register(departmentsRoutes(adminAudit));
  await app.register(appsRoutes(deploy.apps, deploy.registry, config.limits.maxSourceBytes));
  await app.register(sourcesRoutes(deploy.sourceStore));
  await app.register(versionsRoutes(deploy.apps, deploy.registry));
  await app.register(templatesRoutes(() => deploy.platform()));
  const perUser = config.limits.maxConcurrentLogStreamsPerUser;
  const cap = new StreamCap(config.limits.maxStreams);
  const streams = { maxStreamsPerUser: perUser, cap, drain };
  await app.register(logsRoutes(deploy.apps, deploy.registry, streams));
  await app.register(eventsRoutes(deploy.registry, streams));
  await app.register(auditRoutes(deploy.apps));
  await app.register(shareRoutes(deploy.shares));
  await app.register(
    mcpRoutes({ ...deploy, metrics: app.metrics, maxSourceBytes: config.limits.maxSourceBytes }),
  );
  // Before a drain cuts them, deploys still waiting for their app are answered (202: committed,
  // poll the app): never a change made whose client only saw a reset. From then on no request
  // commits a change, and the drain waits for the answers of those that did (commit-gate.ts).
  drain.beforeCut(() => {
    deploy.commits.close();
    deploy.registry.stopWaiting();
    return deploy.commits.answered();
  });
  app.addHook('onClose', async () => {
    router.closeTunnels();
    await deploy.stop();
  });

  return app;
}

/** The in-sandbox agents' identity: good for pulling sources, nothing else. */
const AGENT_IDENTITY: Identity = {
  userId: 'agent',
  name: 'agent',
  role: 'user',
  scopes: ['sources'],
  mode: 'agent',
};

/** One listener: `<name>.<apps domain>` goes to the app router, everything else to fastify. */
function listenerFor(
  tls: TlsMaterial | undefined,
  handler: (req: IncomingMessage, res: ServerResponse) => void,
  router: AppRouter,
  config: Config,
  drain: Drain,
  forward: Forwarder | undefined,
) {
  let delivered: HeadDelivered = () => undefined;
  const dispatch = (req: IncomingMessage, res: ServerResponse): void => {
    delivered(req.socket);
    const name = router.appFor(req);
    // Before the app router too: while draining, an app host is refused like any other request,
    // unless a front door takes the visitor's next request to the next control plane.
    const servable = name !== undefined || req.method === 'GET' || req.method === 'HEAD';
    if (!drain.admit(res, servable)) return;
    if (forward?.request(req, res, name !== undefined)) return;
    if (name === undefined) return handler(req, res);
    router.handle(name, req, res).catch((err: unknown) => router.fail(res, err));
  };
  const guard = {
    headersTimeoutMs: durationMs(config.server.headersTimeout),
    maxPendingPerAddress: config.server.maxPendingConnectionsPerAddress,
  };
  const timeouts = headerTimeouts(guard);
  const server = tls
    ? createHttpsServer({ ...timeouts, key: tls.key, cert: tls.cert }, dispatch)
    : createHttpServer(timeouts, dispatch);
  delivered = guardConnections(server, guard);
  drain.watch(server);
  server.on('upgrade', (req: IncomingMessage, socket, head: Buffer) => {
    delivered(req.socket);
    if (drain.refuseUpgrade(socket)) return;
    if (forward?.upgrade(req, socket, head)) return;
    const name = router.appFor(req);
    if (name !== undefined) {
      router.upgrade(name, req, socket, head).catch(() => socket.destroy());
    } else if (server.listenerCount('upgrade') === 1) {
      // Nothing on the control plane speaks websockets: refuse rather than leave it hanging.
      socket.destroy();
    }
  });
  return server;
}

/** Names besides loopback that a server without auth answers to: the ones its operator chose. */
function extraHosts(config: Config): string[] {
  const hosts: string[] = [];
  if (config.server.baseURL) hosts.push(new URL(config.server.baseURL).hostname);
  const listenHost = config.server.listen.slice(0, config.server.listen.lastIndexOf(':'));
  if (!['', '0.0.0.0', '[::]'].includes(listenHost)) hosts.push(listenHost);
  return hosts;
}
