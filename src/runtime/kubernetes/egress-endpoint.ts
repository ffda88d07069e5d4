import { isIP, connect } from 'node:net';
import { DiscoveryV1Api, type KubeConfig, type V1EndpointSlice } from '@kubernetes/client-node';
import { applyOptions, FIELD_MANAGER } from '../../cluster/request-options.js';
import { apiErrorText } from './kube-apply.js';
import type { Log } from '../../logging.js';

export interface EgressEndpointOptions {
  kubeConfig: KubeConfig;
  namespace: string;
  /** The egress gate's Service (without selector): this slice is its endpoint. */
  service: string;
  /** The port pods dial on the endpoint: the gate's own. */
  port: number;
  /** This control plane's Pod: the slice names it and goes with it (garbage collector). */
  pod: { name: string; uid: string; ip: string };
  log: Log;
  /** How often the gate is probed once published; default 5 s. */
  periodMs?: number;
}

export interface EgressEndpoint {
  /** Probes the gate and publishes the result; then keeps probing, publishing each change. */
  start(): Promise<void>;
  /** The pod is going: not ready for new connections, still serving the open ones. */
  withdraw(): Promise<void>;
}

/**
 * A replica that does not lead runs no gate: its pod's endpoint, which a leader that crashed or
 * lost the Lease in this pod may have left ready, is marked not ready until this replica leads
 * and its runtime publishes it again. The API unreachable: said, and left as it is.
 */
export async function egressStandby(opts: EgressEndpointOptions): Promise<void> {
  const discovery = opts.kubeConfig.makeApiClient(DiscoveryV1Api);
  const name = `${opts.service}-${opts.pod.uid}`;
  const conditions = { ready: false, serving: false, terminating: false };
  await discovery
    .patchNamespacedEndpointSlice(
      {
        name,
        namespace: opts.namespace,
        body: slice(opts, name, conditions),
        fieldManager: FIELD_MANAGER,
        force: true,
      },
      applyOptions(API_TIMEOUT_MS),
    )
    .catch((err: unknown) =>
      opts.log('warn', 'cannot mark the egress gate endpoint not ready', {
        error: apiErrorText(err),
      }),
    );
}

const PROBE_TIMEOUT_MS = 2_000;
const API_TIMEOUT_MS = 5_000;
type Conditions = { ready: boolean; serving: boolean; terminating: boolean };

/**
 * The egress gate's own readiness (issue 27): Kubernetes has one Ready per pod, and the pod's is
 * `/readyz`, which fails while S3 or the API server blips. Sandbox pods have no way out but this
 * gate, so its Service has no selector and Slipway writes its endpoint itself, ready while the
 * gate accepts a connection on the pod's address and answers it. Nothing else counts: not the
 * store, not the object store, not the cluster; a blip of the API server leaves the slice as it
 * was last written.
 */
export function egressEndpoint(opts: EgressEndpointOptions): EgressEndpoint {
  const discovery = opts.kubeConfig.makeApiClient(DiscoveryV1Api);
  const name = `${opts.service}-${opts.pod.uid}`;
  let published: Conditions | undefined;
  let timer: NodeJS.Timeout | undefined;
  let going = false;
  /** The probe and write under way: the terminating write waits for it, so it lands last. */
  let current: Promise<void> = Promise.resolve();

  async function publish(conditions: Conditions): Promise<void> {
    const body = slice(opts, name, conditions);
    await discovery.patchNamespacedEndpointSlice(
      { name, namespace: opts.namespace, body, fieldManager: FIELD_MANAGER, force: true },
      applyOptions(API_TIMEOUT_MS),
    );
    published = conditions;
  }

  async function tick(): Promise<void> {
    const ok = await gateAnswers(opts.pod.ip, opts.port);
    if (going) return;
    if (published?.ready === ok) return;
    if (!ok) opts.log('warn', 'the egress gate does not answer on the pod address', opts.pod);
    await publish({ ready: ok, serving: ok, terminating: false }).catch((err: unknown) =>
      opts.log('warn', 'cannot publish the egress gate endpoint', { error: apiErrorText(err) }),
    );
  }

  return {
    async start() {
      await (current = tick());
      const loop = () => {
        timer = setTimeout(
          () => void (current = tick()).finally(() => !going && loop()),
          opts.periodMs ?? 5_000,
        );
        timer.unref();
      };
      loop();
    },
    async withdraw() {
      going = true;
      clearTimeout(timer);
      await current;
      await publish({ ready: false, serving: true, terminating: true }).catch((err: unknown) =>
        opts.log('warn', 'cannot mark the egress gate endpoint terminating', {
          error: apiErrorText(err),
        }),
      );
    },
  };
}

function slice(opts: EgressEndpointOptions, name: string, conditions: Conditions): V1EndpointSlice {
  const { pod } = opts;
  return {
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    metadata: {
      name,
      namespace: opts.namespace,
      labels: {
        'kubernetes.io/service-name': opts.service,
        // Not the EndpointSlice controller's: it leaves slices with another manager alone.
        'endpointslice.kubernetes.io/managed-by': 'slipway.dev',
        'app.kubernetes.io/component': 'egress-gate',
      },
      ownerReferences: [{ apiVersion: 'v1', kind: 'Pod', name: pod.name, uid: pod.uid }],
    },
    addressType: isIP(pod.ip) === 6 ? 'IPv6' : 'IPv4',
    endpoints: [
      {
        addresses: [pod.ip],
        conditions,
        targetRef: { kind: 'Pod', namespace: opts.namespace, name: pod.name, uid: pod.uid },
      },
    ],
    ports: [{ name: 'egress', protocol: 'TCP', port: opts.port }],
  };
}

/**
 * The gate's probe: a connection to it from the pod's own address, which is no sandbox's, is
 * accepted and refused with an answer. That proves the port listens on the address pods reach and
 * the event loop serves it, and needs nothing outside this process.
 */
function gateAnswers(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host, port, localAddress: host });
    const done = (ok: boolean) => {
      clearTimeout(timer);
      socket.destroy();
      resolve(ok);
    };
    const timer = setTimeout(() => done(false), PROBE_TIMEOUT_MS);
    socket.once('data', () => done(true));
    socket.once('error', () => done(false));
    socket.once('close', () => done(false));
  });
}
