// Two replicas with auth.tls on: the follower hands requests to the leader at its pod address
// (here 127.0.0.1), which the one certificate both serve does not name (it names the public host).
// The follower trusts exactly the certificate it serves itself: the request reaches the leader;
// a leader presenting another certificate is refused (503 leader_unavailable) and sent nothing.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generate } from 'selfsigned';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MOTO_SETUP_TIMEOUT_MS } from '../support/moto.js';
import { waitFor } from './cluster.js';
import { call, leaderOf, replicaConfig, startReplica, type Replica } from './replicas.js';
import { startSlipwayEnv, type SlipwayEnv } from './slipway-env.js';

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
  let env: SlipwayEnv;
  let root: string;
  const replicas: Replica[] = [];

  beforeAll(async () => {
    env = await startSlipwayEnv(NS, 'slipway-replica-tls-sources');
    root = mkdtempSync(join(tmpdir(), 'slipway-k8s-replica-tls-'));
  }, MOTO_SETUP_TIMEOUT_MS);

  afterAll(async () => {
    for (const [i, r] of replicas.entries()) {
      await r.proc.stop('SIGKILL');
      writeFileSync(join(root, `replica-${i}.log`), r.proc.output().join('\n'));
    }
    await env?.stop();
  });

  it('a follower reaches the leader serving the same certificate, and refuses one serving another', async () => {
    const shared = await certificate(root, 'shared');
    const base = await replicaConfig(env, 'rtls');
    const config = (tls: object) => ({
      ...base,
      auth: { apiKeys: [{ key: KEY, name: 'alice', role: 'admin' }], tls },
    });
    const headers = { authorization: `Bearer ${KEY}` };
    const asAdmin = (ca: string) => ({ headers, ca });

    const a = await startReplica(root, 'a', config(shared.config), replicas, { ca: shared.cert });
    await waitFor('a leads', async () => (await leaderOf(a, asAdmin(shared.cert))).leading);
    const b = await startReplica(root, 'b', config(shared.config), replicas, { ca: shared.cert });
    expect(await leaderOf(b, asAdmin(shared.cert))).toMatchObject({ leading: false });

    // Through the follower, answered by the leader.
    const whoami = await call(`${b.url}/api/whoami`, asAdmin(shared.cert));
    expect(whoami.status, whoami.body).toBe(200);
    expect(JSON.parse(whoami.body)).toMatchObject({ name: 'alice', role: 'admin' });
    const apps = await call(`${b.url}/v1/apps`, asAdmin(shared.cert));
    expect(apps.status, apps.body).toBe(200);

    // A replica serving another certificate: the leader's is not its own, so it hands it nothing.
    const other = await certificate(root, 'other');
    const c = await startReplica(root, 'c', config(other.config), replicas, { ca: other.cert });
    expect(await leaderOf(c, asAdmin(other.cert))).toMatchObject({ leading: false });
    const refused = await call(`${c.url}/api/whoami`, asAdmin(other.cert));
    expect(refused.status).toBe(503);
    const body = JSON.parse(refused.body) as { code: string; message: string };
    expect(body).toMatchObject({ code: 'leader_unavailable' });
    expect(body.message).toMatch(/certificate is not the one this replica serves/);
    expect(refused.body).not.toContain('alice');
  }, 300_000);
});
