// The Lease itself (src/cluster/leader-lease.ts) against the real API server: one holder at a
// time, also when two replicas try at the same moment; a leader cut off from the API gives up
// before another replica may take over; a released Lease is taken at once.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LeaderLease } from '../../src/cluster/leader-lease.js';
import { waitFor, type Cluster } from './cluster.js';
import { freshNamespace, kubeConfigFor, startRelay, type Relay } from './configmap-support.js';
import { startCluster } from './cluster.js';

const LEASE_MS = 3_000;
const RENEW_MS = 1_000;

type Lease = {
  metadata: { annotations?: Record<string, string> };
  spec: { holderIdentity?: string; leaseDurationSeconds?: number };
};

describe('LeaderLease on a coordination.k8s.io/v1 Lease', () => {
  let cluster: Cluster;
  let relay: Relay;
  let namespace: string;
  const started: LeaderLease[] = [];

  beforeAll(async () => {
    cluster = await startCluster();
    relay = await startRelay(cluster);
    namespace = await freshNamespace(cluster, 'lease');
  });
  afterAll(async () => {
    for (const l of started) await l.release().catch(() => undefined);
    await cluster?.stop();
  });

  /** A candidate; `events` gets when it acquired and lost the Lease (this process's clock). */
  const candidate = (name: string, identity: string, server?: string) => {
    const events: { acquired?: number; lost?: number; why?: string } = {};
    const lease = new LeaderLease({
      kubeConfig: kubeConfigFor(cluster, server ? { server } : {}),
      namespace,
      name,
      identity,
      url: `http://${identity}.test:8080`,
      leaseMs: LEASE_MS,
      renewMs: RENEW_MS,
      log: () => undefined,
    });
    lease.onAcquired(() => (events.acquired = Date.now()));
    lease.onLost((why) => {
      events.lost = Date.now();
      events.why = why;
    });
    started.push(lease);
    return { lease, events };
  };
  const read = (name: string) =>
    cluster.api.must<Lease>(
      'GET',
      `/apis/coordination.k8s.io/v1/namespaces/${namespace}/leases/${name}`,
    );

  it('gives the Lease to one of two replicas starting at once; the other follows it', async () => {
    const a = candidate('race', 'race-a');
    const b = candidate('race', 'race-b');
    a.lease.start();
    b.lease.start();
    await waitFor('one leads', async () => a.lease.leading || b.lease.leading);
    const [leader, follower] = a.lease.leading ? [a, b] : [b, a];
    await waitFor('the other sees the holder', async () => follower.lease.status().holder);
    // A few renewals later, still exactly one.
    const holder = (await read('race')).spec.holderIdentity;
    await waitFor(
      'three renewals',
      async () => Date.now() - (leader.events.acquired ?? 0) > 3 * RENEW_MS,
    );
    expect([a.lease.leading, b.lease.leading].filter(Boolean)).toHaveLength(1);
    expect(follower.events.acquired).toBeUndefined();
    expect((await read('race')).spec.holderIdentity).toBe(holder);
    expect(follower.lease.status()).toMatchObject({
      leading: false,
      holder,
      leaderUrl: `http://${holder}.test:8080`,
    });
    await leader.lease.release();
    await follower.lease.release();
  });

  it('a leader cut off from the API gives up before a follower may take over; a released Lease goes at once', async () => {
    const a = candidate('cut', 'cut-a', relay.server);
    a.lease.start();
    await waitFor('a leads', async () => a.lease.leading);
    const b = candidate('cut', 'cut-b');
    b.lease.start();
    await waitFor('b follows a', async () => b.lease.status().holder === 'cut-a');

    await relay.cut();
    const cut = Date.now();
    await waitFor('b leads', async () => b.lease.leading, 20_000);
    expect(a.events.lost, 'a gave up').toBeDefined();
    expect(a.events.why).toMatch(/could not be renewed in time/);
    expect(a.lease.leading).toBe(false);
    // Never two leaders: a stopped before b took over, and b waited the Lease out.
    expect(a.events.lost ?? Infinity).toBeLessThan(b.events.acquired ?? 0);
    expect((a.events.lost ?? 0) - cut).toBeLessThanOrEqual(LEASE_MS);
    // a's last renewal was sent at most a renewal (and a call) before the cut.
    expect((b.events.acquired ?? 0) - cut).toBeGreaterThanOrEqual(LEASE_MS - 2 * RENEW_MS);
    expect((await read('cut')).spec.holderIdentity).toBe('cut-b');
    await relay.open();

    // A leader that releases: the holder is cleared and the next replica takes it in a renewal.
    const c = candidate('cut', 'cut-c');
    c.lease.start();
    await waitFor('c follows b', async () => c.lease.status().holder === 'cut-b');
    await b.lease.release();
    const released = Date.now();
    expect(b.events.lost).toBeUndefined();
    expect(['', 'cut-c']).toContain((await read('cut')).spec.holderIdentity);
    await waitFor('c leads', async () => c.lease.leading, 10_000);
    expect((c.events.acquired ?? 0) - released).toBeLessThan(LEASE_MS - RENEW_MS);
    expect((await read('cut')).metadata.annotations?.['slipway.dev/leader-url']).toBe(
      'http://cut-c.test:8080',
    );
  });
});
