import type { FastifyInstance } from 'fastify';
import { randomBytes } from 'node:crypto';
import { isIP } from 'node:net';
import { join } from 'node:path';
import { announceBootstrap, ensureBootstrapAdmin, type BootstrapResult } from './auth/bootstrap.js';
import { ConfigError } from './config/load.js';
import { durationMs, type Config } from './config/schema.js';
import { AppAccess } from './app-hosts/app-access.js';
import { AppRouter } from './app-hosts/app-router.js';
import { AppTraffic } from './app-hosts/app-traffic.js';
import { Metrics } from './metrics.js';
import { Drain } from './http/drain.js';
import { buildServer, type ServerOptions } from './http/server.js';
import { resolveTls } from './http/tls.js';
import { createLogger, serviceLog, type Log, type LogSetting } from './logging.js';
import { chooseDataPath, logsAccess, type DataPath } from './front/data-path.js';
import { haproxyPaths } from './front/haproxy/haproxy-config.js';
import { HaproxyRoutes } from './front/haproxy/haproxy-routes.js';
import { listenForVisitors, type Visitors } from './front/listen.js';
import { clusterIdentity } from './cluster/cluster-identity.js';
import { openLeadership, peerUrl, type Leadership } from './cluster/leadership.js';
import { lockDataDir } from './persistence/data-dir-lock.js';
import { openStore } from './persistence/open-store.js';
import type { Store } from './persistence/store.js';
import { openRoutes, openRuntime } from './runtime/open-runtime.js';
import { createDeployServices, type DeployParts } from './services/compose.js';
import { openSourceStore } from './sources/open-source-store.js';

export interface Running {
  app: FastifyInstance;
  /** The control plane's base URL (`server.baseURL`, or derived from the listen address). */
  baseURL: string;
  /**
   * The clean stop: drains the listener (new requests 503, streams ended, requests in flight
   * finish, for at most `server.shutdownTimeout`), then stops the deploy services and closes the
   * store. Called again, it returns the same stop.
   */
  close(): Promise<void>;
  /** Cuts the drain short (a second signal): what still runs is closed now, then the same stop. */
  hurry(): void;
}

/** A start given up because a stop was asked for meanwhile; everything it began is undone. */
export class StartCancelled extends Error {
  constructor() {
    super('start-up cancelled');
  }
}

export interface StartOptions {
  logger?: LogSetting;
  /** Aborted (a signal during start-up): the start undoes what it did and throws StartCancelled. */
  signal?: AbortSignal;
  /** Not a server people will use (`npm run stop`): it makes no bootstrap admin, and says nothing. */
  transient?: boolean;
  /**
   * With leader election: this replica led and may no longer. Default: the process ends at once
   * (exit 1, nothing stopped), so it reconciles nothing more; its apps keep serving, and it comes
   * back as a follower.
   */
  onLeadershipLost?: (why: string) => void;
}

/** The source store and the runtime the config names, over which the deploy services are built. */
export async function openDeployParts(
  config: Config,
  log: Log,
  dataPath: DataPath = { kind: 'node', why: 'not asked for' },
  store?: Pick<Store, 'getMeta' | 'setMeta'>,
): Promise<DeployParts> {
  const sourceStore = await openSourceStore(config);
  const agentToken = randomBytes(32).toString('base64url');
  const onCluster = config.runtime.backend === 'kubernetes';
  if (onCluster && !store) throw new TypeError('the kubernetes runtime needs the store');
  const cluster =
    onCluster && store ? clusterIdentity(config.runtime.kubernetes.instance, store) : undefined;
  const runtime = await openRuntime(config, { sourceStore, agentToken, log, cluster });
  if (dataPath.kind === 'native') {
    const paths = haproxyPaths(join(config.server.dataDir, 'front'));
    const routes = new HaproxyRoutes(paths, config.server.nativeSlots, log, logsAccess(config));
    // The native front door outlives this process with the sandboxes it routes to.
    return {
      sourceStore,
      runtime,
      agentToken,
      routes,
      keepRoutes: config.server.restartContinuity,
    };
  }
  const routes = await openRoutes(config, cluster, log);
  // Pods outlive this process with restartContinuity, and so do the routes to them.
  const keepRoutes = onCluster && config.server.restartContinuity;
  return { sourceStore, runtime, agentToken, ...(routes ? { routes, keepRoutes } : {}) };
}

/**
 * The composition root: the deploy services over the parts, the path to apps (the access gate
 * and the router) over them, and the control plane's server they are all handed to.
 */
export async function composeServer(
  options: Omit<ServerOptions, 'deploy' | 'router'> & { parts: DeployParts },
): Promise<FastifyInstance> {
  const { config, store, parts, logger } = options;
  const log = serviceLog(logger);
  const deploy = createDeployServices(config, store, parts, log);
  const access = new AppAccess(deploy.store, deploy.grants);
  const metrics = new Metrics();
  const traffic = new AppTraffic(metrics, log);
  parts.routes?.onRequests?.((appId, counts) => traffic.counted(appId, counts));
  parts.routes?.onServed?.((appId, request) => traffic.served(appId, request));
  deploy.registry.on((event) => {
    if (event.kind === 'delete') traffic.forget(event.app_id);
  });
  const router = new AppRouter(deploy.registry, deploy.urls, access, log, traffic);
  const app = await buildServer({ ...options, deploy, router, metrics });
  // A private app's host reads its owner's bearer token as the API does.
  access.identifyWith(
    (message) => app.auth.identifyMessage(message),
    (message) => app.auth.carriesSlipwayBearer(message),
  );
  return app;
}

/** Opens the store, builds the server and listens: the whole of `npm start`, and of e2e tests. */
export async function startSlipway(config: Config, options: StartOptions = {}): Promise<Running> {
  const cancelled = (): boolean => options.signal?.aborted === true;
  const lost =
    options.onLeadershipLost ??
    ((why: string): void => {
      console.error(`slipway: this replica no longer leads (${why}); exiting`);
      process.exit(1);
    });
  const { host, port } = splitListen(config.server.listen);
  assertSafeBind(config, host);
  const dataPath = chooseDataPath(config);
  const tls = await resolveTls(config);
  const logger = createLogger(options.logger ?? { level: 'info' });
  // First of all: a second server on this data dir would take the first one's sandboxes away.
  const lock = await lockDataDir(config.server.dataDir);
  const store = await openStore({
    backend: config.store.backend,
    path: config.store.path,
    envKey: config.store.envKey,
    dataDir: config.server.dataDir,
    kubernetes: config.kubernetes,
    log: serviceLog(logger),
  }).catch(async (err: unknown) => {
    await lock.release();
    throw err;
  });
  const drain = new Drain();
  let leadership: Leadership | undefined;
  let app: FastifyInstance | undefined;
  let bootstrap: BootstrapResult;
  let visitors: Visitors | undefined;
  try {
    const parts = await openDeployParts(config, serviceLog(logger), dataPath, store);
    leadership = await openLeadership(config, serviceLog(logger), { tls, store });
    const forward = leadership?.forwarder;
    app = await composeServer({ config, store, parts, tls, logger, drain, forward });
    if (leadership) followerReadiness(app, leadership);
    if (cancelled()) throw new StartCancelled();
    // A transient server has no operator to hand a new key to: it makes no user.
    bootstrap = options.transient
      ? { kind: 'not-needed' }
      : await ensureBootstrapAdmin(config, store);
    let listening = false;
    app.readiness.register('http', () => ({ ok: listening }));
    // Admins see which data path carries visitors to Ready public apps, and why.
    app.readiness.register('dataPath', () => ({
      ok: true,
      ...(dataPath.kind === 'native'
        ? { kind: 'native', proxy: 'haproxy' }
        : { kind: 'node', why: dataPath.why }),
    }));
    visitors = await listenForVisitors(app, {
      config,
      host,
      port,
      drain,
      dataPath,
      ...(tls ? { tls } : {}),
    });
    listening = true;
    if (cancelled()) throw new StartCancelled();
  } catch (err) {
    if (err instanceof StartCancelled) app?.log.info('start-up cancelled: shutting down');
    await visitors?.abandon();
    await app?.close();
    store.close();
    await lock.release();
    throw err;
  }
  const baseURL = (
    config.server.baseURL ?? `${tls ? 'https' : 'http'}://${urlHost(host)}:${visitors.port}`
  ).replace(/\/+$/, '');
  try {
    if (leadership) {
      // A follower serves through the leader; the apps come back here once this replica leads.
      const running = app;
      leadership.start(
        peerUrl(tls !== undefined, host, visitors.port),
        () =>
          void running.deploy.start(baseURL).catch((err: unknown) => {
            running.log.error({ err }, 'leader: the deploy services did not start');
            lost('the deploy services did not start');
          }),
        (why) => lost(why),
      );
    } else {
      // Not cut short by a signal: stopping the runtime while it prepares the host (runtime dir,
      // cgroups) would leave what it prepared behind. It takes a moment; the stop follows it.
      await app.deploy.start(baseURL);
    }
    if (cancelled()) throw new StartCancelled();
  } catch (err) {
    if (err instanceof StartCancelled) app.log.info('start-up cancelled: shutting down');
    await leadership?.release();
    await visitors.abandon();
    await app.close();
    store.close();
    await lock.release();
    throw err;
  }
  announceBootstrap(bootstrap, baseURL);
  const server = app;
  const door = visitors;
  const timeoutMs = durationMs(config.server.shutdownTimeout);
  let closing: Promise<void> | undefined;
  return {
    app: server,
    baseURL,
    close() {
      closing ??= (async () => {
        // A follower that is stopping must not take the Lease over meanwhile; a leader keeps
        // renewing it through its drain and releases it at the end.
        if (leadership && !leadership.view().leading) await leadership.release();
        server.log.info(
          { requests: drain.pending, timeoutMs },
          'draining: refusing new requests, waiting for those in flight',
        );
        const { forced, ms } = await drain.run(timeoutMs);
        if (forced > 0) {
          server.log.warn(
            { requests: forced, timeoutMs },
            `shutdown: ${forced} request(s) still running when the drain ended; closed them`,
          );
        }
        // The deploy services ran through the drain (the deploys in flight needed them); now
        // they stop (fastify's onClose), then the store, which they write to until then.
        await server.close();
        // A front door that is not to outlive this process goes with it.
        await door.close();
        // A store that writes behind (configmap) gets its last writes out first.
        await store.flush?.().catch((err: unknown) => {
          server.log.error({ err }, 'shutdown: the store could not write what it still held');
        });
        // Held until this replica has stopped reconciling and written everything out.
        await leadership?.release();
        store.close();
        await lock.release();
        server.log.info({ drainMs: ms }, 'shutdown complete');
      })();
      return closing;
    },
    hurry() {
      drain.cut();
    },
  };
}

/** `/readyz` says whether this replica leads; a follower is ready without running sandboxes. */
function followerReadiness(app: FastifyInstance, leadership: Leadership): void {
  // A replica that neither leads nor knows who does could only answer 503 leader_unavailable:
  // it takes no traffic until it has read the Lease.
  app.readiness.register('leader', () => {
    const view = leadership.view();
    return {
      ok: view.leading || (view.holder !== undefined && view.leaderUrl !== undefined),
      ...view,
    };
  });
  // In place of the server's own runtime check: only the leader runs the runtime.
  app.readiness.register('runtime', () =>
    leadership.view().leading
      ? app.deploy.runtimeReadiness()
      : { ok: true, role: 'follower', detail: 'the leader runs the sandboxes' },
  );
}

function splitListen(listen: string): { host: string; port: number } {
  const at = listen.lastIndexOf(':');
  const host = listen.slice(0, at).replace(/^\[(.*)\]$/, '$1');
  const port = Number(listen.slice(at + 1));
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    throw new ConfigError(
      `config: server.listen: port must be 0-65535, got ${listen.slice(at + 1)}`,
    );
  }
  return { host, port };
}

const isLoopback = (host: string): boolean =>
  host === 'localhost' || host === '::1' || (isIP(host) === 4 && host.startsWith('127.'));

function assertSafeBind(config: Config, host: string): void {
  if (config.auth.enabled || config.auth.devInsecure || isLoopback(host)) return;
  throw new ConfigError(
    `config: auth.enabled is false but server.listen binds ${host}, which is not loopback; ` +
      'enable auth or set auth.devInsecure: true',
  );
}

function urlHost(host: string): string {
  if (host === '0.0.0.0' || host === '::' || host === '') return 'localhost';
  return isIP(host) === 6 ? `[${host}]` : host;
}
