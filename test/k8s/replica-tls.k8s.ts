// Two replicas with auth.tls on: the follower hands requests to the leader at its pod address
// (here 127.0.0.1), which the one certificate both serve does not name (it names the public host).
// The follower trusts exactly the certificate it serves itself: the request reaches the leader;
// a leader presenting another certificate is refused (503 leader_unavailable) and sent nothing.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { generate } from 'selfsigned';
import { describe, expect, it } from 'vitest';
import { waitFor } from './cluster.js';
import { call, leaderOf, replicaConfig, replicaSuite, startReplica } from './replicas.js';

const NS = 'slipway-replica-tls';
const KEY = 'replica-tls-key-0123456789abcdef01234';

/** A certificate for the public host only, as a Secret from cert-manager would hold. */
async function certificate(dir: string, name: string): Promise<{ cert: string; config: object }> {
  const pems = await generate([{ name: 'commonName', value: 'slipway.test' }], {
    keySize: 2048,
    algorithm: 'sha256',
    extensions: [{ name: 'subjectAltName', altNames: [{ type: 2, value: 'slipway.test' }] }],
  });
  const certFile = join(dir, `${name}.crt`);
  const keyFile = join(dir, `${name}.key`);
  writeFileSync(certFile, pems.cert);
  writeFileSync(keyFile, pems.private, { mode: 0o600 });
  return { cert: pems.cert, config: { enabled: true, certFile, keyFile } };
}

describe('Kubernetes: two replicas with TLS', () => {
  const s = replicaSuite(NS);

  it('a follower reaches the leader serving the same certificate, and refuses one serving another', async () => {
    const shared = await certificate(s.root, 'shared');
    const base = await replicaConfig(s.env, 'rtls');
    const config = (tls: object) => ({
      ...base,
      auth: { apiKeys: [{ key: KEY, name: 'alice', role: 'admin' }], tls },
    });
    const headers = { authorization: `Bearer ${KEY}` };
    const asAdmin = (ca: string) => ({ headers, ca });

    const a = await startReplica(s.root, 'a', config(shared.config), s.replicas, {
      ca: shared.cert,
    });
    await waitFor('a leads', async () => (await leaderOf(a, asAdmin(shared.cert))).leading);
    const b = await startReplica(s.root, 'b', config(shared.config), s.replicas, {
      ca: shared.cert,
    });
    expect(await leaderOf(b, asAdmin(shared.cert))).toMatchObject({ leading: false });

    // Through the follower, answered by the leader.
    const whoami = await call(`${b.url}/api/whoami`, asAdmin(shared.cert));
    expect(whoami.status, whoami.body).toBe(200);
    expect(JSON.parse(whoami.body)).toMatchObject({ name: 'alice', role: 'admin' });
    const apps = await call(`${b.url}/v1/apps`, asAdmin(shared.cert));
    expect(apps.status, apps.body).toBe(200);

    // A replica serving another certificate: the leader's is not its own, so it hands it nothing.
    const other = await certificate(s.root, 'other');
    const c = await startReplica(s.root, 'c', config(other.config), s.replicas, { ca: other.cert });
    expect(await leaderOf(c, asAdmin(other.cert))).toMatchObject({ leading: false });
    const refused = await call(`${c.url}/api/whoami`, asAdmin(other.cert));
    expect(refused.status).toBe(503);
    const body = JSON.parse(refused.body) as { code: string; message: string };
    expect(body).toMatchObject({ code: 'leader_unavailable' });
    expect(body.message).toMatch(/certificate is not the one this replica serves/);
    expect(refused.body).not.toContain('alice');
  }, 300_000);
});
