import { INLINE_SOURCE_MAX } from '../agent/protocol.js';
import { ConfigError } from '../config/load.js';
import { durationMs, type Config } from '../config/schema.js';
import type { ClusterIdentity } from '../cluster/cluster-identity.js';
import { leaderLeaseName } from '../cluster/leadership.js';
import { kubeRoutePublisher } from '../cluster/route-publisher.js';
import type { RoutePublisher } from '../services/direct-routes.js';
import type { SourceStore } from '../sources/source-store.js';
import { createLocalRuntime } from './local/local-runtime.js';
import type { Runtime } from './runtime.js';
import type { Log } from '../logging.js';

export interface RuntimeDeps {
  sourceStore: SourceStore;
  /** The local agents' shared token (spec §4 /internal/sources); never logged. */
  agentToken: string;
  /** The kubernetes runtime's instance label and pod tokens (from the store). */
  cluster?: ClusterIdentity;
  log: Log;
}

/**
 * The runtime `runtime.backend` names; the one place that knows which runtimes exist. The
 * Kubernetes client is loaded only for the kubernetes runtime: the default start does without it.
 */
export async function openRuntime(config: Config, deps: RuntimeDeps): Promise<Runtime> {
  const { runtime } = config;
  if (runtime.backend === 'kubernetes') {
    const { sourceStore, cluster } = deps;
    if (!cluster) throw new TypeError('the kubernetes runtime needs its cluster identity');
    const presign = sourceStore.presignGet?.bind(sourceStore);
    if (!presign) {
      throw new ConfigError(
        'config: runtime.backend "kubernetes" needs sources.backend "s3": sandbox pods pull sources from pre-signed object-store URLs',
      );
    }
    const [{ loadKubeConfig }, { KubeAccessCheck }, { createKubernetesRuntime }] =
      await Promise.all([
        import('../cluster/kube-config.js'),
        import('../cluster/access-check.js'),
        import('./kubernetes/kubernetes-runtime.js'),
      ]);
    const kubeConfig = loadKubeConfig(config);
    const objects = runtime.kubernetes.sandboxObjects;
    return createKubernetesRuntime({
      kubeConfig,
      sandboxObjects:
        objects.managedBy === 'chart' && objects.pools
          ? { managedBy: 'chart', enrollSecret: objects.enrollSecret, pools: objects.pools }
          : { managedBy: 'slipway' },
      access: new KubeAccessCheck(kubeConfig, config.kubernetes.namespace, {
        sandboxObjects: objects.managedBy,
        ...(objects.managedBy === 'chart' ? { enrollSecret: objects.enrollSecret } : {}),
        routeKind: runtime.kubernetes.routes.kind,
        configMapStore: config.store.backend === 'configmap',
        networkPolicy: runtime.kubernetes.networkPolicy.enabled,
        ...(runtime.kubernetes.leaderElection.enabled
          ? { leaderLease: leaderLeaseName(cluster.instance) }
          : {}),
      }),
      namespace: config.kubernetes.namespace,
      identity: cluster,
      keepRunning: config.server.restartContinuity,
      orphanGraceMs: durationMs(runtime.kubernetes.orphanGrace),
      // A chart may render pools for some templates only: those are the ones served.
      templates:
        objects.managedBy === 'chart' && objects.pools
          ? (Object.keys(objects.pools) as ('static' | 'node' | 'python')[])
          : ['static', 'node', 'python'],
      poolSize: runtime.poolSize,
      claimTimeoutMs: durationMs(runtime.kubernetes.claimTimeout),
      claimAhead: runtime.kubernetes.claimAhead,
      startTimeoutMs: durationMs(runtime.startTimeout),
      pod: {
        image: runtime.kubernetes.image,
        command: runtime.kubernetes.command,
        memoryLimitMB: runtime.memoryLimitMB,
        cpu: runtime.cpu,
      },
      egress: {
        listen: splitHostPort(runtime.kubernetes.egress.listen),
        address: runtime.kubernetes.egress.address,
        service: runtime.kubernetes.egress.service,
        pod: runtime.kubernetes.egress.pod,
        allowPrivate: runtime.egress.allowPrivate,
        maxConnectionsPerSandbox: runtime.egress.maxConnectionsPerSandbox,
        maxConnections: runtime.egress.maxConnections,
        headTimeoutMs: durationMs(runtime.egress.headTimeout),
      },
      ...(runtime.kubernetes.networkPolicy.enabled
        ? {
            networkPolicy: {
              controlPlaneLabels: runtime.kubernetes.networkPolicy.controlPlaneLabels,
              gatewayNamespace: runtime.kubernetes.networkPolicy.gatewayNamespace,
            },
          }
        : {}),
      sourceUrl: presign,
      inlineSource: (key) => sourceStore.readWhole(key, INLINE_SOURCE_MAX),
      versions: runtime.kubernetes.versions,
      log: deps.log,
    });
  }
  return createLocalRuntime({
    dataDir: config.server.dataDir,
    keepRunning: config.server.restartContinuity,
    sourceStore: deps.sourceStore,
    agentToken: deps.agentToken,
    poolSize: runtime.poolSize,
    startTimeoutMs: durationMs(runtime.startTimeout),
    installTimeoutMs: durationMs(runtime.installTimeout),
    memoryLimitMB: runtime.memoryLimitMB,
    pidsLimit: runtime.pidsLimit,
    cpu: runtime.cpu,
    runtimeDir: runtime.dir,
    uids: runtime.uids,
    allowPrivate: runtime.egress.allowPrivate,
    egress: {
      maxConnectionsPerSandbox: runtime.egress.maxConnectionsPerSandbox,
      maxConnections: runtime.egress.maxConnections,
      headTimeoutMs: durationMs(runtime.egress.headTimeout),
    },
    log: deps.log,
  });
}

/** The data path's route writer the config names: kubernetes with routes, else none. */
export async function openRoutes(
  config: Config,
  cluster: ClusterIdentity | undefined,
  log: Log,
): Promise<RoutePublisher | undefined> {
  const { routes } = config.runtime.kubernetes;
  if (config.runtime.backend !== 'kubernetes' || routes.kind === 'none') return undefined;
  const [{ loadKubeConfig }, { AppRoutes }] = await Promise.all([
    import('../cluster/kube-config.js'),
    import('../cluster/app-routes.js'),
  ]);
  const appRoutes = new AppRoutes(loadKubeConfig(config), config.kubernetes.namespace, {
    kind: routes.kind,
    gateway: routes.gateway,
    ...(cluster ? { instance: cluster.instance } : {}),
    followPods: {
      onDrop: (err: unknown) =>
        log('info', 'sandbox pod watch dropped; resyncing', { error: String(err) }),
    },
    ...(routes.ingressClassName ? { ingressClassName: routes.ingressClassName } : {}),
    fallback: {
      serviceName: routes.controlPlaneService.name,
      port: routes.controlPlaneService.port,
    },
  });
  return kubeRoutePublisher(appRoutes);
}

/** `0.0.0.0:3128`, `[::]:3128` → host and port. */
function splitHostPort(text: string): { host: string; port: number } {
  const at = text.lastIndexOf(':');
  return { host: text.slice(0, at).replace(/^\[|\]$/g, ''), port: Number(text.slice(at + 1)) };
}
