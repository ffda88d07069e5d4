// Issue 27 item 3: an app's EndpointSlice names its pod and follows the pod's conditions, so an
// ingress stops sending visitors to a pod that stopped answering its readiness probe.
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deploy, waitForPhase } from '../support/deploy.js';
import { MOTO_SETUP_TIMEOUT_MS } from '../support/moto.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { tarGzDir } from '../support/tarball.js';
import { freePort, waitFor, type Cluster } from './cluster.js';
import { startSlipwayEnv, type SlipwayEnv } from './slipway-env.js';

const NS = 'slipway-slices';
const KEY = 'slices-k8s-key-0123456789abcdef0123';

type Endpoint = {
  addresses: string[];
  conditions?: { ready?: boolean; serving?: boolean; terminating?: boolean };
  targetRef?: { kind?: string; name?: string; uid?: string };
};
type Slice = { items: { endpoints: Endpoint[] }[] };

/** The process and every process under it (the pod's bwrap container and what runs inside). */
function tree(pid: number): number[] {
  const children = readdirSync(`/proc/${pid}/task`).flatMap((task) =>
    readFileSync(`/proc/${pid}/task/${task}/children`, 'utf8').split(' ').filter(Boolean),
  );
  return [pid, ...children.flatMap((child) => tree(Number(child)))];
}

describe('Kubernetes: an EndpointSlice follows its pod', () => {
  let env: SlipwayEnv;
  let cluster: Cluster;
  let server: TestServer;

  beforeAll(async () => {
    env = await startSlipwayEnv(NS, 'slipway-slices-sources');
    cluster = env.cluster;
    server = await startTestServer(
      {
        auth: { apiKeys: [{ key: KEY, name: 'alice' }] },
        ...env.config(),
        runtime: {
          backend: 'kubernetes',
          egress: { allowPrivate: ['127.0.0.1'] },
          poolSize: 1,
          startTimeout: '15s',
          kubernetes: {
            claimTimeout: '20s',
            versions: { node: process.versions.node },
            egress: { listen: `127.0.0.1:${await freePort()}`, address: '127.0.0.1' },
          },
        },
      },
      mkdtempSync(join(tmpdir(), 'slipway-k8s-slices-')),
    );
  }, MOTO_SETUP_TIMEOUT_MS);

  afterAll(async () => {
    await server?.stop();
    await env?.stop();
  });

  it('names the pod (targetRef) and turns ready: false within 5 s of the pod turning unready', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'k8s-slice-'));
    writeFileSync(join(dir, 'package.json'), '{"name":"slice","main":"server.js"}');
    writeFileSync(
      join(dir, 'server.js'),
      "require('node:http').createServer((q, s) => s.end('up')).listen(process.env.PORT);\n",
    );
    const res = await deploy(server.baseURL, KEY, { name: 'k8s-slice' }, await tarGzDir(dir));
    expect([200, 202], JSON.stringify(res.body)).toContain(res.status);
    await waitForPhase(server.baseURL, KEY, 'k8s-slice', ['Ready'], 60_000);
    const endpoint = async () =>
      (
        await cluster.api.must<Slice>(
          'GET',
          `/apis/discovery.k8s.io/v1/namespaces/${NS}/endpointslices?labelSelector=${encodeURIComponent('kubernetes.io/service-name=slipway-app-k8s-slice')}`,
        )
      ).items[0]?.endpoints[0];
    const ready = await waitFor('the endpoint names its pod', async () => {
      const found = await endpoint();
      return found?.targetRef?.kind === 'Pod' ? found : undefined;
    });
    expect(ready.conditions).toEqual({ ready: true, serving: true, terminating: false });
    const ip = ready.addresses[0];
    const [name, pod] =
      [...env.node.running()].find(([, p]) => p.ip === ip) ?? expect.fail(`no pod at ${ip}`);
    expect(name).toBe(`${NS}/${ready.targetRef?.name}`);
    const uid = (
      await cluster.api.must<{ metadata: { uid: string } }>(
        'GET',
        `/api/v1/namespaces/${NS}/pods/${ready.targetRef?.name}`,
      )
    ).metadata.uid;
    expect(ready.targetRef?.uid).toBe(uid);

    // A hung pod: its readiness probe times out, the test node (as a kubelet) marks it unready.
    const stopped = tree(Number(pod.pid));
    for (const pid of stopped) process.kill(pid, 'SIGSTOP');
    const since = Date.now();
    try {
      const unready = await waitFor(
        'the endpoint not ready',
        async () => {
          const found = await endpoint();
          return found?.conditions?.ready === false ? found : undefined;
        },
        15_000,
      );
      const took = Date.now() - since;
      expect(unready.conditions).toEqual({ ready: false, serving: false, terminating: false });
      expect(unready.targetRef?.uid).toBe(uid);
      expect(took).toBeLessThan(5_000);
    } finally {
      for (const pid of stopped) process.kill(pid, 'SIGCONT');
    }
  }, 120_000);
});
