import { createHash, randomBytes } from 'node:crypto';
import type { KubeConfig } from '@kubernetes/client-node';
import { POD_PORTS } from '../../agent/pod-settings.js';
import type { InjectRequest, InjectResponse } from '../../agent/protocol.js';
import {
  AppExitError,
  RuntimeError,
  type InjectSpec,
  type Lane,
  type Runtime,
  type RuntimeStatus,
  type Sandbox,
} from '../runtime.js';
import { createEgressGate } from '../egress/egress-gate.js';
import { egressLimits, SharedCount, type EgressLimits } from '../egress/egress-limits.js';
import { EgressRules } from '../egress/egress-rules.js';
import { ensureSandboxNetworkPolicy } from '../../kube/sandbox-network-policy.js';
import { callAgent } from './agent-client.js';
import { listenEgressPort } from './egress-port.js';
import { ObjectWatch, isTrue, type WatchedObject } from './claim-watch.js';
import { KubeApply, apiErrorText } from './kube-apply.js';
import { PodSandbox } from './pod-sandbox.js';
import {
  ENROLL_SECRET,
  EXT,
  LABELS,
  MANAGED,
  poolName,
  sandboxTemplate,
  warmPool,
  type PodSpecOptions,
} from './sandbox-template.js';

export interface KubernetesRuntimeOptions {
  kubeConfig: KubeConfig;
  namespace: string;
  templates: readonly ('static' | 'node' | 'python')[];
  poolSize: number;
  /** How long a claim may take to bind to a Ready sandbox before it counts as failed. */
  claimTimeoutMs: number;
  startTimeoutMs: number;
  pod: PodSpecOptions;
  /** A short-lived URL the agent pulls the source from (a pre-signed object-store GET). */
  sourceUrl(key: string): Promise<string>;
  /** The language runtimes in the agent image, as `x.y.z`. */
  versions: Record<string, string>;
  egress: EgressOptions;
  /**
   * Whether the cluster has what Slipway needs (API, CRDs, RBAC): part of the runtime's readiness.
   */
  access: { start(): void; stop(): void; status(): { ok: boolean; detail?: string } };
  /** Fence the sandbox pods with a NetworkPolicy (egress: only the gate); undefined: don't. */
  networkPolicy?: { controlPlaneLabels: Record<string, string>; gatewayNamespace?: string };
  log(msg: string, extra?: object): void;
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
  /** `runtime.egress.allowPrivate`. */
  allowPrivate: string[];
  maxConnectionsPerSandbox?: number;
  maxConnections?: number;
  headTimeoutMs?: number;
}

/** Past the agent's own start deadline, how long the control plane waits for its answer. */
const INJECT_GRACE_MS = 2_000;
const CALL_TIMEOUT_MS = 5_000;
/** An inject cut off mid-call: how long the event stream has to say the app exited. */
const EXIT_REPORT_WAIT_MS = 1_000;
const CLAIMS = 'sandboxclaims';
const POOLS = 'sandboxwarmpools';
const SELECTOR = `${LABELS.managedBy}=slipway`;

type Claim = WatchedObject & {
  status?: WatchedObject['status'] & { sandbox?: { name?: string; podIPs?: string[] } };
};
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
  const base = `/apis/${EXT.group}/${EXT.version}/namespaces/${opts.namespace}`;
  const dropped = (what: string) => (err: unknown) =>
    opts.log(`${what} watch dropped; resyncing`, { error: apiErrorText(err) });
  const claims = new ObjectWatch<Claim>(
    opts.kubeConfig,
    `${base}/${CLAIMS}`,
    () => kube.listExt<Claim>(CLAIMS, SELECTOR),
    SELECTOR,
    dropped('claim'),
  );
  const pools = new ObjectWatch<Pool>(
    opts.kubeConfig,
    `${base}/${POOLS}`,
    () => kube.listExt<Pool>(POOLS, SELECTOR),
    SELECTOR,
    dropped('warm pool'),
  );
  const claimed = new Map<string, PodSandbox>();
  /** Claimed pods by address: the egress port knows a pod by where it connects from. */
  const byAddress = new Map<string, PodSandbox>();
  const egressLimitsAll: EgressLimits = egressLimits({
    perSandbox: opts.egress.maxConnectionsPerSandbox,
    total: opts.egress.maxConnections ? new SharedCount(opts.egress.maxConnections) : undefined,
    headTimeoutMs: opts.egress.headTimeoutMs,
  });
  let egressPort: { port: number; close(): Promise<void> } | undefined;
  let enrollKeys: Record<string, string> = {};
  let state: 'new' | 'started' | 'stopped' = 'new';
  let starting: Promise<void> | undefined;

  const start = async (): Promise<void> => {
    opts.access.start();
    enrollKeys = await kube.ensureSecret(
      ENROLL_SECRET,
      opts.templates,
      () => randomBytes(32).toString('base64url'),
      MANAGED,
    );
    egressPort = await listenEgressPort(
      opts.egress.listen.host,
      opts.egress.listen.port,
      (address) => byAddress.get(address)?.egress.gate,
      opts.log,
    );
    const gate = await gateAddress(kube, opts.egress, egressPort.port);
    if (opts.networkPolicy) {
      await ensureSandboxNetworkPolicy(opts.kubeConfig, opts.namespace, {
        sandboxSelector: { [LABELS.sandbox]: 'true' },
        controlPlaneSelector: opts.networkPolicy.controlPlaneLabels,
        egressGatePort: opts.egress.listen.port || egressPort.port,
        agentPort: POD_PORTS.agent,
        appPort: POD_PORTS.public,
        ...(opts.networkPolicy.gatewayNamespace
          ? {
              ingressFrom: [
                {
                  namespaceSelector: {
                    matchLabels: {
                      'kubernetes.io/metadata.name': opts.networkPolicy.gatewayNamespace,
                    },
                  },
                },
              ],
            }
          : {}),
      });
    }
    for (const template of opts.templates) {
      const spec = sandboxTemplate(template, opts.pod, gate);
      await kube.applyExt('sandboxtemplates', spec);
      await applyPool(template, specHash(spec));
    }
    await Promise.all([claims.start(), pools.start()]);
    // Claims of a previous process of ours hold pods nobody serves: the apps claim anew.
    const stale = claims.list().map((c) => c.metadata?.name ?? '');
    await Promise.all(stale.filter(Boolean).map((name) => kube.deleteExt(CLAIMS, name)));
    if (stale.length > 0)
      opts.log('deleted claims left by a previous run', { claims: stale.length });
    state = 'started';
  };

  /** Each template's warm pool now: named for the template spec its pods are made from. */
  const poolOf = new Map<string, string>();

  /**
   * The pool, sized. Warm pods are made from the template as it was when they were made, so a
   * changed template (a new image, a new gate address) gets a new pool; the old pools go, and
   * their idle pods with them (claimed ones live on until their claims are deleted).
   */
  const applyPool = async (template: string, hash: string): Promise<void> => {
    const pool = warmPool(template, opts.poolSize, hash);
    await kube.applyExt(POOLS, pool);
    poolOf.set(template, pool.metadata.name);
    const old = await kube.listExt<Pool>(POOLS, `${SELECTOR},${LABELS.template}=${template}`);
    for (const stale of old.items) {
      const name = stale.metadata?.name;
      if (!name || name === pool.metadata.name) continue;
      opts.log('sandbox template changed: removing the old warm pool', { template, pool: name });
      await kube.deleteExt(POOLS, name);
    }
  };

  const bind = async (template: string, appId: string): Promise<PodSandbox> => {
    const created = await kube
      .createExt(CLAIMS, {
        apiVersion: `${EXT.group}/${EXT.version}`,
        kind: 'SandboxClaim',
        metadata: {
          generateName: `${poolName(template)}-`,
          labels: { ...MANAGED, [LABELS.template]: template, [LABELS.app]: appId },
        },
        spec: { warmPoolRef: { name: poolOf.get(template) ?? poolName(template) } },
      })
      .catch((err: unknown) => {
        throw new RuntimeError(`cannot create a sandbox claim: ${apiErrorText(err)}`, true);
      });
    const name = created.metadata.name;
    try {
      const podIP = await claims
        .waitFor(
          () => {
            const claim = claims.get(name, opts.namespace);
            const ip = claim?.status?.sandbox?.podIPs?.[0];
            return claim?.status?.sandbox?.name && ip && isTrue(claim) ? ip : undefined;
          },
          opts.claimTimeoutMs,
          `claim ${name} bound to a Ready ${template} sandbox`,
        )
        .catch((err: unknown) => {
          throw new RuntimeError(`no warm ${template} sandbox: ${(err as Error).message}`, true);
        });
      const token = randomBytes(32).toString('base64url');
      const enroll = await callAgent(
        { host: podIP, port: POD_PORTS.agent },
        enrollKeys[template] ?? '',
        'POST',
        '/enroll',
        { token },
        CALL_TIMEOUT_MS,
      ).catch((err: unknown) => {
        throw new RuntimeError(`sandbox ${name} did not enroll: ${(err as Error).message}`, true);
      });
      if (enroll.status !== 200) {
        throw new RuntimeError(`sandbox ${name} refused to enroll (${enroll.status})`, true);
      }
      const rules = new EgressRules(
        { allowedHosts: [], allowPrivate: opts.egress.allowPrivate },
        opts.log,
      );
      const egress = {
        rules,
        gate: createEgressGate({ rules, limits: egressLimitsAll, log: opts.log }),
      };
      const sandbox = new PodSandbox(name, template, podIP, token, egress);
      await sandbox.follow();
      return sandbox;
    } catch (err) {
      await kube
        .deleteExt(CLAIMS, name)
        .catch((e: unknown) =>
          opts.log('cannot delete a failed claim', { claim: name, error: apiErrorText(e) }),
        );
      throw err;
    }
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
      await Promise.all([...claimed.values()].map((s) => reap(s)));
      opts.access.stop();
      await Promise.all([claims.stop(), pools.stop()]);
      await egressPort?.close();
    },

    async claim(template, appId) {
      if (!opts.templates.includes(template as never)) {
        throw new RuntimeError(`no ${template} template on this runtime`, false);
      }
      await starting;
      if (state !== 'started')
        throw new RuntimeError('the kubernetes runtime is not running', true);
      const sandbox = await bind(template, appId);
      if (state !== 'started') {
        await reap(sandbox);
        throw new RuntimeError('the kubernetes runtime stopped', true);
      }
      claimed.set(sandbox.id, sandbox);
      byAddress.set(sandbox.podIP, sandbox);
      return sandbox;
    },

    async inject(sandbox, spec) {
      const pod = claimed.get(sandbox.id);
      if (!pod || pod.phase !== 'claimed') {
        throw new RuntimeError(`sandbox ${sandbox.id} is not freshly claimed`, false);
      }
      pod.phase = 'injecting';
      try {
        await injectInto(pod, spec);
        pod.phase = 'running';
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
        CALL_TIMEOUT_MS,
      ).catch(() => undefined);
      return answer?.status === 200;
    },

    reap,

    status(): RuntimeStatus {
      const byTemplate: RuntimeStatus['pools'] = {};
      for (const template of opts.templates) {
        const pool = pools.get(poolOf.get(template) ?? '', opts.namespace);
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
        limits: {
          enforced: true,
          detail: 'pod resource limits (memory, cpu) set on the SandboxTemplate',
        },
      };
    },

    laneUnavailable(template: string, lane: Lane) {
      if (lane !== 'general') return undefined;
      return `the general lane (an install step) is not available on the kubernetes runtime: vendor the ${template === 'python' ? 'packages' : 'dependencies'} into the source, or deploy to a local-runtime Slipway`;
    },

    versions() {
      return { ...opts.versions };
    },
  };

  async function injectInto(pod: PodSandbox, spec: InjectSpec): Promise<void> {
    if (spec.template !== pod.template) {
      throw new RuntimeError(`sandbox ${pod.id} runs ${pod.template}, not ${spec.template}`, false);
    }
    const sourceUrl = await opts.sourceUrl(spec.sourceKey).catch((err: unknown) => {
      throw new RuntimeError(`cannot hand out the source: ${(err as Error).message}`, true);
    });
    // The pull goes through the gate like everything else out of the pod: the object store is
    // let through for the inject only, then the app's own list applies.
    const store = new URL(sourceUrl);
    const storePort = store.port || (store.protocol === 'https:' ? '443' : '80');
    pod.egress.rules.set({
      allowedHosts: [...spec.allowedHosts, `${store.hostname}:${storePort}`],
      allowPrivate: [...opts.egress.allowPrivate, store.hostname.replace(/^\[|\]$/g, '')],
    });
    try {
      await startApp(pod, spec, sourceUrl);
    } finally {
      pod.egress.rules.set({
        allowedHosts: spec.allowedHosts,
        allowPrivate: opts.egress.allowPrivate,
      });
    }
  }

  async function startApp(pod: PodSandbox, spec: InjectSpec, sourceUrl: string): Promise<void> {
    const request: InjectRequest = {
      sourceKey: spec.sourceKey,
      sourceUrl,
      env: spec.env,
      startTimeoutMs: opts.startTimeoutMs,
      ...(spec.entrypoint ? { entrypoint: spec.entrypoint } : {}),
    };
    const started = performance.now();
    const answer = await callAgent(
      pod.control,
      pod.token,
      'POST',
      '/inject',
      request,
      opts.startTimeoutMs + INJECT_GRACE_MS,
    ).catch(async (err: unknown) => {
      const exit = await pod.exitWithin(EXIT_REPORT_WAIT_MS);
      if (exit) throw new AppExitError(exit);
      throw new RuntimeError(
        `inject into sandbox ${pod.id} failed: ${(err as Error).message}`,
        true,
      );
    });
    const body = answer.body as InjectResponse | undefined;
    if (answer.status === 200 && body?.ok) {
      opts.log('app started', {
        sandbox: pod.id,
        app: spec.appId,
        hostMs: Math.round(performance.now() - started),
        agentMs: body.ms,
      });
      return;
    }
    if (answer.status === 422 && body && !body.ok && 'exit' in body) {
      throw new AppExitError({
        code: body.exit.code,
        signal: body.exit.signal,
        lastLines: body.exit.lastLines.length > 0 ? body.exit.lastLines : pod.lastLines(),
      });
    }
    const error = body && !body.ok && 'error' in body ? body.error : `status ${answer.status}`;
    // 400: the source or entrypoint cannot work, a retry would not help.
    throw new RuntimeError(error, answer.status !== 400);
  }
}

/** The gate's address as pods dial it: configured, or the egress Service's ClusterIP. */
async function gateAddress(kube: KubeApply, egress: EgressOptions, bound: number): Promise<string> {
  if (egress.address)
    return /:\d+$/.test(egress.address) ? egress.address : `${egress.address}:${bound}`;
  const service = await kube.core
    .readNamespacedService({ name: egress.service, namespace: kube.namespace })
    .catch((err: unknown) => {
      throw new Error(`the egress Service ${egress.service}: ${apiErrorText(err)}`);
    });
  const ip = service.spec?.clusterIP;
  const port = service.spec?.ports?.[0]?.port;
  if (!ip || ip === 'None' || !port) {
    throw new Error(`the egress Service ${egress.service} has no ClusterIP and port`);
  }
  return `${ip}:${port}`;
}

function specHash(spec: object): string {
  return createHash('sha256').update(JSON.stringify(spec)).digest('hex').slice(0, 10);
}
