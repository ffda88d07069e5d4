import { ApiException } from '@kubernetes/client-node';

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

/** The HTTP status of a failed API call, if it got one. */
export function statusOf(err: unknown): number | undefined {
  if (err instanceof ApiException) return err.code;
  const code = (err as { statusCode?: unknown } | undefined)?.statusCode;
  return typeof code === 'number' ? code : undefined;
}

/** A failed API call as a fault with a host-free reason: the status, or the socket error's code. */
export function unavailable(err: unknown): KubeStoreFault {
  if (err instanceof KubeStoreFault) return err;
  const status = statusOf(err);
  if (status !== undefined) {
    return new KubeStoreFault('KUBE_UNAVAILABLE', `the Kubernetes API answered ${status}`);
  }
  const code = (err as { code?: unknown } | undefined)?.code;
  const why = typeof code === 'string' && /^[A-Z_]+$/.test(code) ? code : 'no answer';
  return new KubeStoreFault('KUBE_UNAVAILABLE', `the Kubernetes API is unreachable (${why})`);
}

/** Rejects with a fault when `promise` has not settled after `ms`: a hung call counts as down. */
export async function within<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(
      () => reject(new KubeStoreFault('KUBE_UNAVAILABLE', `the Kubernetes API took over ${ms} ms`)),
      ms,
    );
  });
  try {
    return await Promise.race([promise, late]);
  } finally {
    clearTimeout(timer);
  }
}
