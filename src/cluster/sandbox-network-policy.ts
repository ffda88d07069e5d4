import {
  NetworkingV1Api,
  type KubeConfig,
  type V1NetworkPolicyPeer,
} from '@kubernetes/client-node';
import { FIELD_MANAGER, applyOptions } from './request-options.js';

export interface SandboxNetworkPolicyOptions {
  /** Labels of the sandbox pods (the policy's subject). Must not be empty: that is every pod. */
  sandboxSelector: Record<string, string>;
  /** Labels of the control plane pods, in the same namespace. Must not be empty. */
  controlPlaneSelector: Record<string, string>;
  /** The control plane's egress gate: the one place sandboxes may connect to. */
  egressGatePort: number;
  /** The agent's control port in the sandbox pod. */
  agentPort: number;
  /** The app's port in the sandbox pod. */
  appPort: number;
  /** The ingress controller or gateway pods that reach apps directly (app port only). */
  ingressFrom?: V1NetworkPolicyPeer[];
  /** Default `slipway-sandboxes`. */
  name?: string;
  /** Per API call. Default 10 s. */
  timeoutMs?: number;
}

/** A rule as the API takes it (the client's typed model names `from` `_from`; apply sends JSON as is). */
type PolicyRule = { from: V1NetworkPolicyPeer[]; ports: { protocol: string; port: number }[] };

/** The NetworkPolicy as sent with server-side apply. */
export interface NetworkPolicyManifest {
  apiVersion: 'networking.k8s.io/v1';
  kind: 'NetworkPolicy';
  metadata: { name: string; namespace: string; labels: Record<string, string> };
  spec: {
    podSelector: { matchLabels: Record<string, string> };
    policyTypes: ['Ingress', 'Egress'];
    ingress: PolicyRule[];
    egress: { to: V1NetworkPolicyPeer[]; ports: PolicyRule['ports'] }[];
  };
}

/**
 * Creates or updates (server-side apply) the NetworkPolicy that fences sandbox pods in. Egress:
 * only TCP to the control plane pods on the egress gate port — no DNS, nothing else; apps reach
 * the outside only through the gate, which enforces each app's allow-list. Ingress: from the
 * control plane on the agent and app ports, and from `ingressFrom` on the app port.
 */
export async function ensureSandboxNetworkPolicy(
  kc: KubeConfig,
  namespace: string,
  opts: SandboxNetworkPolicyOptions,
): Promise<void> {
  const body = sandboxNetworkPolicy(namespace, opts);
  await kc.makeApiClient(NetworkingV1Api).patchNamespacedNetworkPolicy(
    {
      name: body.metadata.name,
      namespace,
      body,
      fieldManager: FIELD_MANAGER,
      force: true,
    },
    applyOptions(opts.timeoutMs ?? 10_000),
  );
}

/** The policy object itself; refuses selectors and ports that would fence nothing or the wrong pods. */
export function sandboxNetworkPolicy(
  namespace: string,
  opts: SandboxNetworkPolicyOptions,
): NetworkPolicyManifest {
  const { sandboxSelector: sandbox, controlPlaneSelector: controlPlane } = opts;
  if (Object.keys(sandbox).length === 0 || Object.keys(controlPlane).length === 0) {
    throw new TypeError('sandbox network policy: an empty selector would select every pod');
  }
  if (Object.entries(controlPlane).every(([k, v]) => sandbox[k] === v)) {
    // Every sandbox pod would match the control plane selector: sandboxes could reach each other.
    throw new TypeError('sandbox network policy: the control plane selector matches sandbox pods');
  }
  for (const [what, port] of [
    ['egressGatePort', opts.egressGatePort],
    ['agentPort', opts.agentPort],
    ['appPort', opts.appPort],
  ] as const) {
    if (!Number.isInteger(port) || port < 1 || port > 65535) {
      throw new RangeError(`sandbox network policy: ${what} ${port} is out of range (1-65535)`);
    }
  }
  const tcp = (port: number) => ({ protocol: 'TCP', port });
  const fromControlPlane: V1NetworkPolicyPeer[] = [{ podSelector: { matchLabels: controlPlane } }];
  const ingress: PolicyRule[] = [
    { from: fromControlPlane, ports: [tcp(opts.agentPort), tcp(opts.appPort)] },
  ];
  if (opts.ingressFrom?.length)
    ingress.push({ from: opts.ingressFrom, ports: [tcp(opts.appPort)] });
  return {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    metadata: {
      name: opts.name ?? 'slipway-sandboxes',
      namespace,
      labels: { 'app.kubernetes.io/managed-by': 'slipway' },
    },
    spec: {
      podSelector: { matchLabels: sandbox },
      policyTypes: ['Ingress', 'Egress'],
      ingress,
      egress: [{ to: fromControlPlane, ports: [tcp(opts.egressGatePort)] }],
    },
  };
}
