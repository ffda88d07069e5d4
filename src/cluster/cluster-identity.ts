import { createHmac, randomBytes } from 'node:crypto';
import type { Store } from '../persistence/store.js';

/** Who this installation is on the cluster, and how it re-authenticates to its sandbox pods. */
export interface ClusterIdentity {
  /** The `slipway.dev/instance` label value of every claim and route it writes. */
  instance: string;
  /**
   * A sandbox pod's own agent token, from the claim's name and a key kept in the store: a
   * control plane that starts again (or a second one on the same store) speaks to the pods the
   * last one enrolled, and no token is ever written anywhere else.
   */
  tokenFor(claim: string): string;
}

const INSTANCE_KEY = 'kubernetes_instance';
const SANDBOX_KEY = 'kubernetes_sandbox_key';

/** `configured` (runtime.kubernetes.instance) or the id the store keeps, made once. */
export function clusterIdentity(
  configured: string | undefined,
  meta: Pick<Store, 'getMeta' | 'setMeta'>,
): ClusterIdentity {
  const instance = configured ?? kept(meta, INSTANCE_KEY, () => `slipway-${hex(4)}`);
  // Read (or made) at the first claim, not at start: with leader election only the leader
  // claims, so replicas starting at once on an empty store do not each make a key of their own.
  let key: Buffer | undefined;
  return {
    instance,
    tokenFor(claim) {
      key ??= Buffer.from(
        kept(meta, SANDBOX_KEY, () => hex(32)),
        'hex',
      );
      return createHmac('sha256', key).update(claim).digest('base64url');
    },
  };
}

function kept(meta: Pick<Store, 'getMeta' | 'setMeta'>, key: string, make: () => string): string {
  const stored = meta.getMeta(key);
  if (stored) return stored;
  const fresh = make();
  meta.setMeta(key, fresh);
  return fresh;
}

function hex(bytes: number): string {
  return randomBytes(bytes).toString('hex');
}
