// API-key auth with no key configured, on an empty configmap store: two replicas starting at once
// each find no admin and try to make the bootstrap admin. Exactly one key is made and shown, the
// other replica finds it, and that key works through both replicas. The replicas reach the API
// server over a slow link (each answer 2 s late), longer than the spread of their starts: the
// second lists the store before the first one's admin is in it, and learns of it (the watch)
// only after it has tried to make its own, as on a busy cluster.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { waitFor } from './cluster.js';
import { startRelay } from './configmap-support.js';
import { call, replicaConfig, replicaSuite, startReplica } from './replicas.js';

const NS = 'slipway-replica-bootstrap';
const LINK_DELAY_MS = 2_000;
const CREATED = /created bootstrap admin apikey-admin; its API key, shown only this once: (\S+)/;

type UserConfigMap = { metadata: { annotations?: Record<string, string> } };

describe('Kubernetes: the bootstrap admin of replicas starting at once on an empty store', () => {
  const s = replicaSuite(NS);

  it('makes one admin and one key, which both replicas accept', async () => {
    const relay = await startRelay(s.env.cluster, { delayMs: LINK_DELAY_MS });
    const kubeconfig = join(s.root, 'slow.kubeconfig');
    writeFileSync(
      kubeconfig,
      readFileSync(s.env.cluster.kubeconfig, 'utf8').replace(s.env.cluster.server, relay.server),
    );
    const base = await replicaConfig(s.env, 'rboot');
    const runtime = base.runtime as { kubernetes: Record<string, unknown> };
    const config = {
      ...base,
      kubernetes: { namespace: NS, kubeconfig },
      runtime: {
        ...runtime,
        kubernetes: {
          ...runtime.kubernetes,
          // A renewal's round trip is two delays: the Lease must outlast a few.
          leaderElection: { enabled: true, leaseSeconds: 30, renewSeconds: 2 },
        },
      },
    };
    const started = await Promise.all(
      ['a', 'b'].map((name) => startReplica(s.root, name, config, s.replicas)),
    );
    const said = await waitFor('both replicas said what they made', async () => {
      const lines = started.map((r) =>
        r.proc
          .output()
          .find((l) => CREATED.test(l) || l.includes('bootstrap admin apikey-admin exists')),
      );
      return lines.every(Boolean) ? (lines as string[]) : undefined;
    });
    const keys = said.flatMap((line) => CREATED.exec(line)?.[1] ?? []);
    expect(keys, said.join('\n')).toHaveLength(1);
    const key = keys[0] ?? '';

    // One user in the store: one ConfigMap of kind user, the bootstrap admin.
    const users = await s.env.cluster.api.must<{ items: UserConfigMap[] }>(
      'GET',
      `/api/v1/namespaces/${NS}/configmaps?labelSelector=${encodeURIComponent('slipway.dev/kind=user')}`,
    );
    expect(users.items.map((cm) => cm.metadata.annotations?.['slipway.dev/id'])).toEqual([
      'apikey-admin',
    ]);
    // The shown key works through either replica (a follower hands it to the leader), and the
    // leader lists exactly one user.
    for (const r of started) {
      const whoami = await call(`${r.url}/api/whoami`, {
        headers: { authorization: `Bearer ${key}` },
      });
      expect(whoami.status, whoami.body).toBe(200);
      expect(JSON.parse(whoami.body)).toMatchObject({ user_id: 'apikey-admin', role: 'admin' });
      const listed = await call(`${r.url}/api/users`, {
        headers: { authorization: `Bearer ${key}` },
      });
      expect(listed.status, listed.body).toBe(200);
      const body = JSON.parse(listed.body) as { items: { id: string }[] };
      expect(body.items.map((u) => u.id)).toEqual(['apikey-admin']);
    }
  }, 300_000);
});
