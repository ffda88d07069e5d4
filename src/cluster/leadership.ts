import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { Config } from '../config/schema.js';
import type { TlsMaterial } from '../http/tls.js';
import type { Log } from '../logging.js';
import { leaderForwarder, type Forwarder } from './leader-forward.js';
import type { LeaderLease, LeaderView } from './leader-lease.js';
import { peerTls } from './peer-tls.js';
import { forwardProof } from './forward-proof.js';
import type { Store } from '../persistence/store.js';

/**
 * One replica's part in leader election (`runtime.kubernetes.leaderElection`): the forwarder a
 * follower hands its requests through, and the Lease it competes for once it listens.
 */
export interface Leadership {
  forwarder: Forwarder;
  view(): LeaderView;
  /**
   * Competes for the Lease, advertising `url`: `acquired` runs when this replica takes it,
   * `lost` when it led and no longer may (it must stop acting at once).
   */
  start(url: string, acquired: () => void, lost: (why: string) => void): void;
  /** Gives the Lease up (a clean stop): the next replica takes over without waiting it out. */
  release(): Promise<void>;
}

export interface LeadershipParts {
  /** What this replica's listener serves: the certificate the leader must present too. */
  tls?: TlsMaterial;
  /** Keeps the key the replicas vouch for their clients' addresses with (forward-proof.ts). */
  store: Pick<Store, 'getMeta' | 'setMeta'>;
}

/** The leadership the config asks for, or undefined (one replica, no election). */
export async function openLeadership(
  config: Config,
  log: Log,
  { tls, store }: LeadershipParts,
): Promise<Leadership | undefined> {
  const k8s = config.runtime.kubernetes;
  if (config.runtime.backend !== 'kubernetes' || !k8s.leaderElection.enabled) return undefined;
  // Loaded only here: a server without leader election never loads the Kubernetes client for it.
  const [{ loadKubeConfig }, { LeaderLease }] = await Promise.all([
    import('./kube-config.js'),
    import('./leader-lease.js'),
  ]);
  const kubeConfig = loadKubeConfig(config);
  const { egress } = k8s;
  if (egress.pod) {
    const { egressStandby } = await import('../runtime/kubernetes/egress-endpoint.js');
    const port = Number(egress.listen.slice(egress.listen.lastIndexOf(':') + 1));
    const namespace = config.kubernetes.namespace;
    await egressStandby({
      kubeConfig,
      namespace,
      service: egress.service,
      port,
      pod: egress.pod,
      log,
    });
  }
  const identity = `${hostname()}_${randomBytes(4).toString('hex')}`;
  let lease: LeaderLease | undefined;
  const view = (): LeaderView => lease?.status() ?? { leading: false, identity };
  const proof = forwardProof(store);
  return {
    forwarder: leaderForwarder(view, { ...(tls ? { tls: peerTls(tls.cert) } : {}), proof }),
    view,
    start(url, acquired, lost) {
      lease = new LeaderLease({
        kubeConfig,
        namespace: config.kubernetes.namespace,
        name: leaderLeaseName(k8s.instance ?? 'slipway'),
        identity,
        url: k8s.leaderElection.peerURL ?? url,
        leaseMs: k8s.leaderElection.leaseSeconds * 1000,
        renewMs: k8s.leaderElection.renewSeconds * 1000,
        log,
      });
      lease.onAcquired(() => {
        // Made by a leader only (replicas starting at once do not each make one); the followers
        // read it from the store. Until they have it, what they vouch for is not believed.
        try {
          proof.ensureKey();
        } catch (err) {
          log('error', "leader: the replicas' forwarding key could not be stored", {
            err: String(err),
          });
        }
        acquired();
      });
      lease.onLost(lost);
      lease.start();
    },
    release: async () => lease?.release(),
  };
}

/** The Lease the replicas of installation `instance` elect their leader with. */
export function leaderLeaseName(instance: string): string {
  return `${instance}-leader`;
}

/** Where the other replicas reach a listener on `host:port`: the pod's IP when it is known. */
export function peerUrl(tls: boolean, host: string, port: number): string {
  const wildcard = host === '' || host === '0.0.0.0' || host === '::';
  const address = process.env.SVC_POD_IP ?? (wildcard ? hostname() : host);
  const bracketed = address.includes(':') ? `[${address}]` : address;
  return `${tls ? 'https' : 'http'}://${bracketed}:${port}`;
}
