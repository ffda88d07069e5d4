import {
  CoreV1Api,
  makeInformer,
  type KubeConfig,
  type V1EndpointConditions,
  type V1ObjectReference,
  type V1Pod,
} from '@kubernetes/client-node';
import { restartOnDrop, type InformerRestart } from './informer-restart.js';

/** The label every sandbox pod carries (the SandboxTemplate's pod template). */
export const SANDBOX_POD_SELECTOR = 'slipway.dev/sandbox=true';

/** What an EndpointSlice says about the pod behind an address. */
export interface PodEndpoint {
  conditions: V1EndpointConditions;
  targetRef?: V1ObjectReference;
}

/**
 * An endpoint's conditions as the EndpointSlice controller derives them from a pod: serving while
 * the pod is Ready, terminating once it is being deleted, ready when serving and not terminating.
 * A pod not (yet) seen counts as ready, as before any pod was watched: the route was published
 * because the app answered there.
 */
export function endpointOf(pod: V1Pod | undefined): PodEndpoint {
  if (!pod?.metadata) return { conditions: { ready: true } };
  const serving = (pod.status?.conditions ?? []).some(
    (c) => c.type === 'Ready' && c.status === 'True',
  );
  const terminating = pod.metadata.deletionTimestamp !== undefined;
  return {
    conditions: { ready: serving && !terminating, serving, terminating },
    targetRef: {
      kind: 'Pod',
      name: pod.metadata.name,
      namespace: pod.metadata.namespace,
      uid: pod.metadata.uid,
    },
  };
}

/**
 * The namespace's sandbox pods by address (list, then watch, re-listed a second after a drop), so
 * an app's EndpointSlice can follow its pod: `onChange` hears each address whose pod changed.
 */
export class SandboxPods {
  private readonly informer;
  private readonly byIP = new Map<string, V1Pod>();
  private readonly restart: InformerRestart;

  constructor(
    kc: KubeConfig,
    namespace: string,
    private readonly onChange: (ip: string) => void,
    onDrop: (err: unknown) => void,
  ) {
    const core = kc.makeApiClient(CoreV1Api);
    this.informer = makeInformer<V1Pod>(
      kc,
      `/api/v1/namespaces/${namespace}/pods`,
      () => core.listNamespacedPod({ namespace, labelSelector: SANDBOX_POD_SELECTOR }),
      SANDBOX_POD_SELECTOR,
    );
    this.informer.on('add', (pod) => this.seen(pod));
    this.informer.on('update', (pod) => this.seen(pod));
    this.informer.on('delete', (pod) => this.gone(pod));
    this.restart = restartOnDrop(this.informer, onDrop);
  }

  /** Lists and watches; an API that does not answer now is tried again (the routes work meanwhile). */
  async start(): Promise<void> {
    await this.informer.start().catch(this.restart.dropped);
  }

  async stop(): Promise<void> {
    this.restart.stop();
    await this.informer.stop();
  }

  get(ip: string): V1Pod | undefined {
    return this.byIP.get(ip);
  }

  private seen(pod: V1Pod): void {
    const ip = pod.status?.podIP;
    if (!ip) return;
    this.byIP.set(ip, pod);
    this.onChange(ip);
  }

  /** Kept as terminating and not Ready: a route still naming its address must not count it ready. */
  private gone(pod: V1Pod): void {
    const ip = pod.status?.podIP;
    if (!ip || this.byIP.get(ip)?.metadata?.uid !== pod.metadata?.uid) return;
    this.byIP.set(ip, {
      ...pod,
      metadata: {
        ...pod.metadata,
        deletionTimestamp: pod.metadata?.deletionTimestamp ?? new Date(),
      },
      status: { ...pod.status, conditions: [] },
    });
    this.onChange(ip);
  }
}
