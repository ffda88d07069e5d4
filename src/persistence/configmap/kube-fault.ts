import { statusOf as apiStatusOf } from '../../cluster/request-options.js';

/**
 * Why the configmap store cannot write: the API server refused or did not answer a write
 * (`KUBE_UNAVAILABLE`), or a record would not fit in one ConfigMap (`KUBE_TOO_LARGE`). Both are
 * storage faults (src/persistence/storage-faults.ts): a change meanwhile answers 503
 * storage_unavailable. `reason` is short and names no host, token or path.
 */
export class KubeStoreFault extends Error {
  constructor(
    readonly code: 'KUBE_UNAVAILABLE' | 'KUBE_TOO_LARGE',
    readonly reason: string,
  ) {
    super(`configmap store: ${reason}`);
    this.name = 'KubeStoreFault';
  }
}

/** The HTTP status of a failed API call (or of a watch that did not start), if it got one. */
export function statusOf(err: unknown): number | undefined {
  const code = (err as { statusCode?: unknown } | undefined)?.statusCode;
  return apiStatusOf(err) ?? (typeof code === 'number' ? code : undefined);
}

/** A failed API call as a fault with a host-free reason: the status, or the socket error's code. */
export function unavailable(err: unknown): KubeStoreFault {
  if (err instanceof KubeStoreFault) return err;
  const status = statusOf(err);
  if (status !== undefined) {
    return new KubeStoreFault('KUBE_UNAVAILABLE', `the Kubernetes API answered ${status}`);
  }
  if ((err as { name?: unknown } | undefined)?.name === 'AbortError') {
    return new KubeStoreFault('KUBE_UNAVAILABLE', 'the Kubernetes API did not answer in time');
  }
  const code = (err as { code?: unknown } | undefined)?.code;
  const why = typeof code === 'string' && /^[A-Z_]+$/.test(code) ? code : 'no answer';
  return new KubeStoreFault('KUBE_UNAVAILABLE', `the Kubernetes API is unreachable (${why})`);
}
