import type { KubeConfig } from '@kubernetes/client-node';
import { egressLimits, SharedCount } from '../egress/egress-limits.js';
import {
  RuntimeError,
  type AdoptedSandbox,
  type Lane,
  type Runtime,
  type RuntimeStatus,
  type Sandbox,
} from '../runtime.js';
import { callAgent } from './agent-client.js';
import { adoptClaim, recordRuns, type Runs } from './claim-adoption.js';
import { bindClaim, type BindDeps, type Claim } from './claim-binding.js';
import { ClaimReserve } from './claim-reserve.js';
import { ObjectWatch, type WatchedObject } from './claim-watch.js';
import { gateAddress, setUpCluster } from './cluster-setup.js';
import { egressEndpoint, type EgressEndpoint } from './egress-endpoint.js';
import { listenEgressPort } from './egress-port.js';
import { KubeApply, apiErrorText } from './kube-apply.js';
import { injectPod } from './pod-inject.js';
import type { PodSandbox } from './pod-sandbox.js';
import { CLAIMS, EXT, LABELS, POOLS, SELECTOR, type PodSpecOptions } from './sandbox-template.js';
import type { Log } from '../../logging.js';

export interface KubernetesRuntimeOptions {
  kubeConfig: KubeConfig;
  namespace: string;
  /** This installation's instance label, and each claim's pod token. */
  identity: { instance: string; tokenFor(claim: string): string };
  /**
   * `server.restartContinuity`: pods that serve an app outlive this process (their claims stay)
   * and the next start adopts them. Off: a stop deletes every claim, a start every leftover.
   */
  keepRunning: boolean;
  /** How long a start leaves a claim of this instance that it did not adopt before deleting it. */
  orphanGraceMs: number;
  templates: readonly ('static' | 'node' | 'python')[];
  poolSize: number;
  /** Claims bound ahead of deploys per template (claim-reserve.ts); 0: each deploy claims. */
  claimAhead: number;
  /** How long a claim may take to bind to a Ready sandbox before it counts as failed. */
  claimTimeoutMs: number;
  startTimeoutMs: number;
  pod: PodSpecOptions;
  /** A short-lived URL the agent pulls the source from (a pre-signed object-store GET). */
  sourceUrl(key: string): Promise<string>;
  /** The source itself when it is small enough to ride in the inject request. */
  inlineSource(key: string): Promise<Buffer | undefined>;
  /** The language runtimes in the agent image, as `x.y.z`. */
  versions: Record<string, string>;
  egress: EgressOptions;
  /** Whether the cluster has what Slipway needs (API, CRDs, RBAC): part of readiness. */
  access: { start(): void; stop(): void; status(): { ok: boolean; detail?: string } };
  /**
   * Who writes the SandboxTemplates, pools and enroll Secret: this runtime, or a Helm release
   * that names its Secret and each template's pool.
   */
  sandboxObjects:
    | { managedBy: 'slipway' }
    | { managedBy: 'chart'; enrollSecret: string; pools: Partial<Record<string, string>> };
  /** Fence the sandbox pods with a NetworkPolicy (egress: only the gate); undefined: don't. */
  networkPolicy?: { controlPlaneLabels: Record<string, string>; gatewayNamespace?: string };
  log: Log;
}

export interface EgressOptions {
  /** Where the control plane's egress port listens. */
  listen: { host: string; port: number };
  /**
   * The gate as pods dial it, `address` or `address:port` (the bound port when none); unset: the
   * ClusterIP and first port of `service`.
   */
  address?: string;
  service: string;
  /** This control plane's Pod: it publishes the gate's endpoint on `service` itself. */
  pod?: { name: string; uid: string; ip: string };
  /** `runtime.egress.allowPrivate`. */
  allowPrivate: string[];
  maxConnectionsPerSandbox?: number;
  maxConnections?: number;
  headTimeoutMs?: number;
}

const HEALTH_TIMEOUT_MS = 5_000;

type Pool = WatchedObject & {
  status?: WatchedObject['status'] & { readyReplicas?: number; replicas?: number };
};

/**
 * The kubernetes runtime (design.md §4): one SandboxTemplate and SandboxWarmPool per template, a
 * SandboxClaim per start attempt, the same agent in each pod reached over its control port with
 * this sandbox's own token, health through the agent, reap by deleting the claim.
 */
export function createKubernetesRuntime(opts: KubernetesRuntimeOptions): Runtime {
  const kube = new KubeApply(opts.kubeConfig, opts.namespace);
  const claims = watch<Claim>(
    CLAIMS,
    'claim',
    `${SELECTOR},${LABELS.instance}=${opts.identity.instance}`,
  );
  // Pools by their template label: a chart's carry its own managed-by.
  const pools = watch<Pool>(POOLS, 'warm pool', LABELS.template);
  const claimed = new Map<string, PodSandbox>();
  /** Claimed pods by address: the egress port knows a pod by where it connects from. */
  const byAddress = new Map<string, PodSandbox>();
  const bindDeps: BindDeps = {
    kube,
    claims,
    poolOf: new Map(),
    enrollKeys: {},
    instance: opts.identity.instance,
    tokenFor: opts.identity.tokenFor,
    claimTimeoutMs: opts.claimTimeoutMs,
    allowPrivate: opts.egress.allowPrivate,
    egressLimits: egressLimits({
      perSandbox: opts.egress.maxConnectionsPerSandbox,
      total: opts.egress.maxConnections ? new SharedCount(opts.egress.maxConnections) : undefined,
      headTimeoutMs: opts.egress.headTimeoutMs,
    }),
    log: opts.log,
  };
  let egressPort: { port: number; close(): Promise<void> } | undefined;
  let gateEndpoint: EgressEndpoint | undefined;
  let state: 'new' | 'started' | 'stopped' = 'new';
  let starting: Promise<void> | undefined;
  let adopted: AdoptedSandbox[] = [];
  let orphanTimer: NodeJS.Timeout | undefined;
  const noting = new Set<Promise<void>>();
  const reserve = new ClaimReserve({
    size: opts.claimAhead,
    templates: opts.templates,
    bind: (template) => bindClaim(template, undefined, bindDeps),
    release: (pod) => {
      pod.close();
      return deleteClaims([pod.id], 'held ahead of deploys');
    },
    log: opts.log,
  });

  function watch<T extends WatchedObject>(
    plural: string,
    what: string,
    selector: string,
  ): ObjectWatch<T> {
    const path = `/apis/${EXT.group}/${EXT.version}/namespaces/${opts.namespace}/${plural}`;
    return new ObjectWatch<T>(
      opts.kubeConfig,
      path,
      () => kube.listExt<T>(plural, selector),
      selector,
      (err) => opts.log('info', `${what} watch dropped; resyncing`, { error: apiErrorText(err) }),
    );
  }

  const start = async (): Promise<void> => {
    opts.access.start();
    const { listen } = opts.egress;
    egressPort = await listenEgressPort(
      listen.host,
      listen.port,
      (address) => byAddress.get(address)?.egress.gate,
      opts.log,
    );
    const objects = opts.sandboxObjects;
    const setup =
      objects.managedBy === 'chart'
        ? {
            enrollKeys: await kube.readSecret(objects.enrollSecret, opts.templates),
            poolOf: new Map(
              Object.entries(objects.pools).filter(
                (e): e is [string, string] => e[1] !== undefined,
              ),
            ),
          }
        : await setUpCluster(kube, {
            ...opts,
            gate: await gateAddress(kube, opts.egress, egressPort.port),
            gatePort: listen.port || egressPort.port,
          });
    bindDeps.enrollKeys = setup.enrollKeys;
    bindDeps.poolOf = setup.poolOf;
    await Promise.all([claims.start(), pools.start()]);
    const left = claims.list().filter((c) => c.metadata?.name);
    if (opts.keepRunning) await takeBack(left);
    else
      await deleteClaims(
        left.map((c) => c.metadata?.name ?? ''),
        'left by a previous run',
      );
    state = 'started';
    reserve.start();
    // Once the pods it holds are known: a connection from one of them finds its gate.
    if (opts.egress.pod) {
      gateEndpoint = egressEndpoint({
        kubeConfig: opts.kubeConfig,
        namespace: opts.namespace,
        service: opts.egress.service,
        port: egressPort.port,
        pod: opts.egress.pod,
        log: opts.log,
      });
      await gateEndpoint.start();
    }
  };

  /**
   * The claims a previous process of this instance left: those whose pod still runs its app are
   * held again (handed to the registry by adopted()); the rest are deleted once the grace is over
   * and nothing took them meanwhile.
   */
  const takeBack = async (left: Claim[]): Promise<void> => {
    const taken = await Promise.all(left.map((claim) => adoptClaim(claim, bindDeps)));
    for (const found of taken) {
      if (!found) continue;
      const { sandbox, runs } = found;
      claimed.set(sandbox.id, sandbox);
      byAddress.set(sandbox.podIP, sandbox);
      adopted.push({ sandbox, appId: runs.app, version: runs.version });
    }
    const orphans = left.map((c) => c.metadata?.name ?? '').filter((name) => !claimed.has(name));
    opts.log('info', 'claims left by the last process', {
      found: left.length,
      adopted: adopted.length,
      orphans: orphans.length,
    });
    if (orphans.length === 0) return;
    orphanTimer = setTimeout(() => {
      orphanTimer = undefined;
      const gone = orphans.filter((name) => !claimed.has(name));
      void deleteClaims(gone, 'that no app ran after the grace period');
    }, opts.orphanGraceMs);
    orphanTimer.unref();
  };

  const deleteClaims = async (names: string[], why: string): Promise<void> => {
    const results = await Promise.allSettled(names.map((name) => kube.deleteExt(CLAIMS, name)));
    const failed = results.filter((r) => r.status === 'rejected');
    if (names.length > 0) opts.log('info', `deleted claims ${why}`, { claims: names.length });
    for (const r of failed) {
      opts.log('warn', 'a claim could not be deleted', { error: apiErrorText(r.reason) });
    }
  };

  /**
   * Writes on the claim what its pod runs, for the next process to adopt it: an API write (10-50 ms
   * on the test cluster) the deploy's answer does not wait for. Without it the next process starts
   * the app anew, no worse; a stop waits for the writes in flight.
   */
  const noteRuns = (pod: PodSandbox, runs: Runs): void => {
    const write = recordRuns(kube, pod.id, runs)
      .catch((err: unknown) => {
        if (pod.phase === 'gone') return;
        opts.log('warn', 'cannot note on the claim what it runs', {
          sandbox: pod.id,
          error: apiErrorText(err),
        });
      })
      .finally(() => noting.delete(write));
    noting.add(write);
  };

  /** A pod that serves an app stays for the next process; our ends of it close. */
  const leave = (pod: PodSandbox): void => {
    claimed.delete(pod.id);
    if (byAddress.get(pod.podIP) === pod) byAddress.delete(pod.podIP);
    pod.close();
  };

  const reap = async (sandbox: Sandbox): Promise<void> => {
    const pod = claimed.get(sandbox.id);
    claimed.delete(sandbox.id);
    if (pod && byAddress.get(pod.podIP) === pod) byAddress.delete(pod.podIP);
    pod?.close();
    await kube.deleteExt(CLAIMS, sandbox.id);
  };

  return {
    backend: 'kubernetes',
    templates: opts.templates,

    async start() {
      if (state !== 'new') return;
      await (starting ??= start());
    },

    async stop() {
      if (state === 'stopped') return;
      state = 'stopped';
      await starting?.catch(() => undefined);
      await gateEndpoint?.withdraw();
      clearTimeout(orphanTimer);
      adopted = [];
      await Promise.all([...noting, reserve.stop()]);
      await Promise.all(
        [...claimed.values()].map((s) =>
          opts.keepRunning && s.phase === 'running' ? leave(s) : reap(s),
        ),
      );
      opts.access.stop();
      await Promise.all([claims.stop(), pools.stop()]);
      // Claims still binding fail with the watch; each deletes its own.
      await reserve.drained();
      await egressPort?.close();
    },

    async claim(template, appId) {
      if (!opts.templates.includes(template as never)) {
        throw new RuntimeError(`no ${template} template on this runtime`, false);
      }
      await starting;
      if (state !== 'started')
        throw new RuntimeError('the kubernetes runtime is not running', true);
      const sandbox = reserve.take(template) ?? (await bindClaim(template, appId, bindDeps));
      if (state !== 'started') {
        await reap(sandbox);
        throw new RuntimeError('the kubernetes runtime stopped', true);
      }
      claimed.set(sandbox.id, sandbox);
      byAddress.set(sandbox.podIP, sandbox);
      return sandbox;
    },

    async inject(sandbox, spec, upload) {
      const pod = claimed.get(sandbox.id);
      if (!pod || pod.phase !== 'claimed') {
        throw new RuntimeError(`sandbox ${sandbox.id} is not freshly claimed`, false);
      }
      pod.phase = 'injecting';
      try {
        const stages = await injectPod(
          pod,
          spec,
          {
            sourceUrl: opts.sourceUrl,
            inlineSource: opts.inlineSource,
            startTimeoutMs: opts.startTimeoutMs,
            allowPrivate: opts.egress.allowPrivate,
            log: opts.log,
          },
          upload,
        );
        pod.phase = 'running';
        noteRuns(pod, { app: spec.appId, version: spec.version, allowedHosts: spec.allowedHosts });
        return stages;
      } catch (err) {
        pod.phase = 'failed';
        await reap(pod);
        throw err;
      }
    },

    async health(sandbox) {
      const pod = claimed.get(sandbox.id);
      if (!pod) return false;
      const answer = await callAgent(
        pod.control,
        pod.token,
        'GET',
        '/health',
        undefined,
        HEALTH_TIMEOUT_MS,
      ).catch((err: unknown) => {
        opts.log('info', 'health check failed', { sandbox: pod.id, error: (err as Error).message });
        return undefined;
      });
      return answer?.status === 200;
    },

    reap,

    adopted() {
      const taken = adopted;
      adopted = [];
      return taken.filter((a) => claimed.get(a.sandbox.id) === a.sandbox);
    },

    status(): RuntimeStatus {
      const byTemplate: RuntimeStatus['pools'] = {};
      for (const template of opts.templates) {
        const pool = pools.get(bindDeps.poolOf.get(template) ?? '', opts.namespace);
        const ready = pool?.status?.readyReplicas ?? 0;
        byTemplate[template] = {
          idle: ready,
          target: opts.poolSize,
          booting: Math.max(0, (pool?.status?.replicas ?? 0) - ready),
        };
      }
      const access = opts.access.status();
      return {
        ok: state === 'started' && claims.healthy && pools.healthy && access.ok,
        backend: 'kubernetes',
        cluster: access.ok ? 'ok' : (access.detail ?? 'not checked yet'),
        pools: byTemplate,
        claimed: claimed.size,
        claimsAhead: Object.fromEntries(opts.templates.map((t) => [t, reserve.count(t)])),
        limits: {
          enforced: true,
          detail: 'pod resource limits (memory, cpu) on the SandboxTemplate',
        },
      };
    },

    laneUnavailable(template: string, lane: Lane) {
      if (lane !== 'general') return undefined;
      const what = template === 'python' ? 'packages' : 'dependencies';
      return `the general lane (an install step) is not available on the kubernetes runtime: vendor the ${what} into the source, or deploy to a local-runtime Slipway`;
    },

    versions() {
      return { ...opts.versions };
    },
  };
}
