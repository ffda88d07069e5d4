import { createHash, randomBytes } from 'node:crypto';
import type { KubeConfig } from '@kubernetes/client-node';
import { POD_PORTS } from '../../agent/pod-settings.js';
import { ensureSandboxNetworkPolicy } from '../../cluster/sandbox-network-policy.js';
import { apiErrorText, type KubeApply } from './kube-apply.js';
import {
  ENROLL_SECRET,
  LABELS,
  MANAGED,
  POOLS,
  SELECTOR,
  sandboxTemplate,
  warmPool,
  type PodSpecOptions,
} from './sandbox-template.js';
import type { Log } from '../../logging.js';

export interface ClusterSetupOptions {
  kubeConfig: KubeConfig;
  templates: readonly string[];
  poolSize: number;
  pod: PodSpecOptions;
  /** The gate as pods dial it, `address:port`. */
  gate: string;
  /** The control plane's egress port, for the NetworkPolicy. */
  gatePort: number;
  networkPolicy?: { controlPlaneLabels: Record<string, string>; gatewayNamespace?: string };
  log: Log;
}

/** What the runtime needs from the setup: each template's enroll key and its pool now. */
export interface ClusterSetup {
  enrollKeys: Record<string, string>;
  poolOf: Map<string, string>;
}

/**
 * Brings the namespace to what the config says, idempotently, at every start: the enroll Secret,
 * the sandboxes' NetworkPolicy, one SandboxTemplate and one SandboxWarmPool per template.
 */
export async function setUpCluster(
  kube: KubeApply,
  opts: ClusterSetupOptions,
): Promise<ClusterSetup> {
  const enrollKeys = await kube.ensureSecret(
    ENROLL_SECRET,
    opts.templates,
    () => randomBytes(32).toString('base64url'),
    MANAGED,
  );
  if (opts.networkPolicy) {
    const { controlPlaneLabels, gatewayNamespace } = opts.networkPolicy;
    await ensureSandboxNetworkPolicy(opts.kubeConfig, kube.namespace, {
      sandboxSelector: { [LABELS.sandbox]: 'true' },
      controlPlaneSelector: controlPlaneLabels,
      egressGatePort: opts.gatePort,
      agentPort: POD_PORTS.agent,
      appPort: POD_PORTS.public,
      ...(gatewayNamespace
        ? {
            ingressFrom: [
              {
                namespaceSelector: {
                  matchLabels: { 'kubernetes.io/metadata.name': gatewayNamespace },
                },
              },
            ],
          }
        : {}),
    });
  }
  const poolOf = new Map<string, string>();
  for (const template of opts.templates) {
    const spec = sandboxTemplate(template, opts.pod, opts.gate);
    await kube.applyExt('sandboxtemplates', spec);
    poolOf.set(template, await applyPool(kube, template, opts.poolSize, specHash(spec), opts.log));
  }
  return { enrollKeys, poolOf };
}

/**
 * The template's pool, sized, named for the hash of the template its pods are made from: a
 * changed template (a new image, a new gate address) gets a new pool, and the old pools go with
 * their idle pods (claimed ones live on until their claims are deleted).
 */
async function applyPool(
  kube: KubeApply,
  template: string,
  size: number,
  hash: string,
  log: Log,
): Promise<string> {
  const pool = warmPool(template, size, hash);
  await kube.applyExt(POOLS, pool);
  const all = await kube.listExt<{ metadata?: { name?: string } }>(
    POOLS,
    `${SELECTOR},${LABELS.template}=${template}`,
  );
  for (const stale of all.items) {
    const name = stale.metadata?.name;
    if (!name || name === pool.metadata.name) continue;
    log('info', 'sandbox template changed: removing the old warm pool', { template, pool: name });
    await kube.deleteExt(POOLS, name);
  }
  return pool.metadata.name;
}

/** The gate's address as pods dial it: configured, or the egress Service's ClusterIP and port. */
export async function gateAddress(
  kube: KubeApply,
  egress: { address?: string; service: string },
  bound: number,
): Promise<string> {
  if (egress.address) {
    return /(^[^:]+|\])(:\d+)$/.test(egress.address)
      ? egress.address
      : `${bracketed(egress.address)}:${bound}`;
  }
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
  return `${bracketed(ip)}:${port}`;
}

function bracketed(ip: string): string {
  return ip.includes(':') && !ip.startsWith('[') ? `[${ip}]` : ip;
}

function specHash(spec: object): string {
  return createHash('sha256').update(JSON.stringify(spec)).digest('hex').slice(0, 10);
}
