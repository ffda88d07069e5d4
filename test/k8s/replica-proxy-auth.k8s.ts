// Proxy auth (auth.mode: oauth, X-Forwarded-User from a trusted proxy) through a follower: the
// leader sees the follower's connection, so the follower vouches for its client's address with an
// HMAC under a key both replicas read from the store, and the leader applies its own
// trustedProxies to that address. Clients connect from chosen loopback addresses: 127.0.0.5 is the
// auth proxy, 127.0.0.9 a stranger; the replicas reach each other from 127.0.0.1.
import { describe, expect, it } from 'vitest';
import { configMapName, objectKey } from '../../src/persistence/configmap/configmap-objects.js';
import { waitFor } from './cluster.js';
import {
  call,
  leaderOf,
  replicaConfig,
  replicaSuite,
  startReplica,
  type Replica,
} from './replicas.js';

const NS = 'slipway-replica-proxy';
const PROXY = '127.0.0.5';
const STRANGER = '127.0.0.9';
const KEY_CONFIGMAP = configMapName(objectKey('meta', 'replica_forward_key'));

describe('Kubernetes: X-Forwarded-User through a follower replica', () => {
  const s = replicaSuite(NS);

  /** A leader and a follower trusting `trustedProxies`; the admin view through the proxy. */
  const pair = async (name: string, trustedProxies: string[]) => {
    // The last test's replicas, stopped however it ended: these take the Lease over.
    for (const r of s.replicas) await r.proc.stop('SIGTERM');
    const config = {
      ...(await replicaConfig(s.env, 'rproxy')),
      auth: { mode: 'oauth', oauth: { trustedProxies, adminGroup: 'admins' } },
    };
    const admin = {
      localAddress: PROXY,
      headers: { 'x-forwarded-user': 'root', 'x-forwarded-groups': 'admins' },
    };
    const leader = await startReplica(s.root, `${name}-leader`, config, s.replicas);
    await waitFor(`${name}: one leads`, async () => (await leaderOf(leader, admin)).leading);
    const follower = await startReplica(s.root, `${name}-follower`, config, s.replicas);
    expect(await leaderOf(follower, admin)).toMatchObject({ leading: false });
    return { leader, follower };
  };
  const whoami = (replica: Replica, from: string, headers: Record<string, string> = {}) =>
    call(`${replica.url}/api/whoami`, {
      localAddress: from,
      headers: { 'x-forwarded-user': 'mallory', ...headers },
    });

  it('authenticates the trusted proxy through the follower, and nobody else', async () => {
    const { leader, follower } = await pair('one', [PROXY]);

    // The proxy's user, through the follower: the leader trusts the proxy's address it vouches for.
    const viaFollower = await whoami(follower, PROXY, { 'x-forwarded-user': 'carol' });
    expect(viaFollower.status, viaFollower.body).toBe(200);
    expect(JSON.parse(viaFollower.body)).toMatchObject({ name: 'carol', role: 'user' });

    // A stranger gets what the leader gives it directly.
    const direct = await whoami(leader, STRANGER);
    const stranger = await whoami(follower, STRANGER);
    expect(direct.status).toBe(401);
    expect(stranger.status, stranger.body).toBe(direct.status);
    expect(JSON.parse(stranger.body)).toMatchObject({ code: JSON.parse(direct.body).code });

    // Forged forwarding headers: to the leader, not signed with the replicas' key; to the
    // follower, replaced by its own (or, marked as handed on already, not handed on at all).
    const claims = {
      'x-slipway-forwarded-for': PROXY,
      'x-slipway-forwarded-proof': `v1.${Date.now()}.${'A'.repeat(43)}`,
    };
    const forged = { ...claims, 'x-slipway-forwarded-by': 'replica-x' };
    expect((await whoami(leader, STRANGER, forged)).status).toBe(401);
    expect((await whoami(follower, STRANGER, claims)).status).toBe(401);
    expect((await whoami(follower, STRANGER, forged)).status).not.toBe(200);
    // Even from the proxy's address, a forged claim to the leader makes its address unknown.
    expect((await whoami(leader, PROXY, forged)).status).toBe(401);

    // The key is in the store, and in no replica's log.
    const stored = await s.env.cluster.api.must<{ data: Record<string, string> }>(
      'GET',
      `/api/v1/namespaces/${NS}/configmaps/${KEY_CONFIGMAP}`,
    );
    const key = (JSON.parse(stored.data['meta.json'] ?? '{}') as { value?: string }).value ?? '';
    expect(key).toMatch(/^[0-9a-f]{64}$/);
    for (const r of [leader, follower]) expect(r.proc.output().join('\n')).not.toContain(key);
  }, 300_000);

  it("a replica's own address trusted as a proxy (a pod CIDR) lends a stranger nothing through the follower", async () => {
    const { leader, follower } = await pair('two', [PROXY, '127.0.0.1']);
    expect((await whoami(leader, STRANGER)).status).toBe(401);
    const stranger = await whoami(follower, STRANGER);
    expect(stranger.status, stranger.body).toBe(401);
    const proxied = await whoami(follower, PROXY, { 'x-forwarded-user': 'carol' });
    expect(JSON.parse(proxied.body)).toMatchObject({ name: 'carol' });
  }, 300_000);
});
