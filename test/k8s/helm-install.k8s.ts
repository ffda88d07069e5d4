// Issue 27 item 6: `helm install` of charts/slipway with the images images.sh built. The
// Deployment and ReplicaSet controllers make the control plane's pod; the test node runs it as a
// kubelet would: from the control-plane image's root filesystem (uid 65532, read-only root, the
// chart's emptyDirs, memory limit) in a network namespace of its own (pod-network.ts), its config
// ConfigMap and ServiceAccount token mounted from the API (pod-volumes.ts), reaching the API
// server in-cluster through the `kubernetes` Service. Its sandbox pods run from the agent image.
// moto (S3) is the one thing outside the cluster: forwarded to the node's address, where both the
// control plane's pod and the sandbox pods reach it, as they would an object store.
import {
  mkdtempSync,
  readFileSync,
  readdirSync,
  readlinkSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deploy, fetchApp, waitForPhase } from '../support/deploy.js';
import { MOTO_CREDENTIALS, MOTO_SETUP_TIMEOUT_MS } from '../support/moto.js';
import { tarGzDir } from '../support/tarball.js';
import { CHART, mustHelm } from './chart-tools.js';
import { waitFor, type Pod } from './cluster.js';
import { bundlesDir } from './image-run.js';
import { waitForWarmReady } from './image-server.js';
import { podPorts } from './pod-agent.js';
import { startServiceProxy, type ServiceProxy } from './service-proxy.js';
import { startSlipwayEnv, type SlipwayEnv } from './slipway-env.js';
import { forwardTcp, type TcpForward } from './tcp-forward.js';

const NS = 'slipway';
const BUCKET = 'helm-install';
const BUNDLE = join(bundlesDir, 'slipway');

/** The Deployment's pods (owned by its ReplicaSet); sandbox pods are their Sandboxes'. */
const isControlPlane = (pod: Pod) =>
  (pod.metadata as { ownerReferences?: { kind: string }[] } | undefined)?.ownerReferences?.[0]
    ?.kind === 'ReplicaSet';

/** Every process under `pid` (the pod's bwrap), read from /proc. */
function descendants(pid: number): number[] {
  const children = new Map<number, number[]>();
  for (const entry of readdirSync('/proc').filter((e) => /^\d+$/.test(e))) {
    let stat: string;
    try {
      stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
    } catch (err) {
      // Ended between the listing and the read.
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') continue;
      throw err;
    }
    const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    children.set(ppid, [...(children.get(ppid) ?? []), Number(entry)]);
  }
  const out: number[] = [];
  for (const queue = [pid]; queue.length > 0;) {
    const next = children.get(queue.shift() ?? 0) ?? [];
    out.push(...next);
    queue.push(...next);
  }
  return out;
}

describe('helm install with the built images: the control plane runs as a pod on the test node', () => {
  let env: SlipwayEnv;
  let moto: TcpForward;
  let egress: ServiceProxy;
  let podName: string;
  let podIP: string;
  let base: string;
  let key: string;

  beforeAll(async () => {
    env = await startSlipwayEnv(NS, BUCKET, {
      cluster: { workloads: true },
      images: { extraEnv: (pod) => (isControlPlane(pod) ? {} : podPorts()) },
      ownNetwork: isControlPlane,
    });
    const { cluster, node } = env;
    const gateway = String(node.gateway);
    const motoPort = Number(new URL(env.moto.endpoint).port);
    moto = await forwardTcp(
      { host: gateway, port: motoPort },
      { host: '127.0.0.1', port: motoPort },
    );
    await cluster.api.must('POST', `/api/v1/namespaces/${NS}/secrets`, {
      metadata: { name: 'slipway-s3' },
      stringData: MOTO_CREDENTIALS,
    });
    const [repository, tag] = readFileSync(join(BUNDLE, 'reference'), 'utf8').trim().split(':');
    const agent = readFileSync(join(bundlesDir, 'slipway-agent', 'reference'), 'utf8').trim();
    const set = {
      'image.repository': String(repository),
      'image.tag': String(tag),
      'sandboxes.image': agent,
      // No storage provisioner in the test cluster: a PVC would stay Pending. /data on an emptyDir.
      'store.persistence.enabled': 'false',
      'sources.s3.endpoint': `http://${gateway}:${motoPort}`,
      'sources.s3.bucket': BUCKET,
      'sources.s3.forcePathStyle': 'true',
      'sources.s3.existingSecret': 'slipway-s3',
      'sandboxes.templates': '{node}',
      'sandboxes.poolSize': '1',
      // The gate fetches sources for the pods; moto's address is private.
      'sandboxes.allowPrivate': `{${gateway}}`,
    };
    const out = await mustHelm(
      join(cluster.dir, 'helm'),
      [
        'install',
        'slipway',
        CHART,
        '-n',
        NS,
        ...Object.entries(set).flatMap(([k, v]) => ['--set', `${k}=${v}`]),
      ],
      cluster.kubeconfig,
    );
    expect(out).toContain('STATUS: deployed');
    // kube-proxy's part for the egress Service: its ClusterIP to the gate's endpoint, which the
    // control plane writes for its own pod.
    egress = await startServiceProxy(cluster.api, NS, 'slipway-egress');
    type PodList = {
      items: (Pod & {
        status?: { podIP?: string; conditions?: { type: string; status: string }[] };
      })[];
    };
    const ready = await waitFor(
      "the Deployment's pod Ready",
      async () => {
        const { items } = await cluster.api.must<PodList>(
          'GET',
          `/api/v1/namespaces/${NS}/pods?labelSelector=${encodeURIComponent('app.kubernetes.io/name=slipway')}`,
        );
        return items.find(
          (p) => p.status?.conditions?.find((c) => c.type === 'Ready')?.status === 'True',
        );
      },
      180_000,
      250,
    );
    podName = String(ready.metadata?.name);
    podIP = String(ready.status?.podIP);
    base = `http://${podIP}:8080`;
    const secret = await cluster.api.must<{ data: Record<string, string> }>(
      'GET',
      `/api/v1/namespaces/${NS}/secrets/slipway-api-key`,
    );
    key = Buffer.from(String(secret.data['api-key']), 'base64').toString('utf8');
  }, MOTO_SETUP_TIMEOUT_MS + 180_000);

  afterAll(async () => {
    await egress?.stop();
    await moto?.stop();
    await env?.stop();
  });

  it("runs the pod from the control-plane image's root filesystem, as uid 65532, in its own network namespace", () => {
    const running = env.node.running().get(`${NS}/${podName}`);
    expect(running?.ip).toBe(podIP);
    // bwrap's own processes carry the command line too; the control plane's is the one it exec'd.
    const main = descendants(Number(running?.pid)).find((pid) =>
      readFileSync(`/proc/${pid}/cmdline`, 'utf8').startsWith('node\0--import\0tsx\0src/main.ts'),
    );
    expect(main, 'the control plane process in the pod').toBeDefined();
    // The Node binary it runs is the image's (same file), not the host's.
    const exe = statSync(`/proc/${main}/exe`);
    const imageNode = statSync(join(BUNDLE, 'rootfs', 'usr', 'local', 'bin', 'node'));
    expect([exe.dev, exe.ino]).toEqual([imageNode.dev, imageNode.ino]);
    expect(statSync(process.execPath).ino).not.toBe(exe.ino);
    const status = readFileSync(`/proc/${main}/status`, 'utf8');
    expect(/^Uid:\s+(\d+)/m.exec(status)?.[1]).toBe('65532');
    expect(readlinkSync(`/proc/${main}/ns/net`)).not.toBe(readlinkSync('/proc/self/ns/net'));
    // Its ServiceAccount token, from the TokenRequest API, where in-cluster config reads it.
    // (/var/run in the image is a link to /run, which, read from out here, the host's root resolves.)
    const sa = `/proc/${main}/root/run/secrets/kubernetes.io/serviceaccount`;
    const token = readFileSync(`${sa}/token`, 'utf8');
    const claims = JSON.parse(
      Buffer.from(token.split('.')[1] ?? '', 'base64url').toString('utf8'),
    ) as { sub: string };
    expect(claims.sub).toBe(`system:serviceaccount:${NS}:slipway`);
    expect(readFileSync(`${sa}/namespace`, 'utf8')).toBe(NS);
    expect(readFileSync(`${sa}/ca.crt`, 'utf8')).toBe(env.cluster.ca);
  });

  it('answers /readyz 200 on its pod IP, with the pool filled by a pod from the agent image', async () => {
    const res = await waitForWarmReady(base, key, 120_000);
    expect(res.status).toBe(200);
  });

  it("deploys an app through the API with the chart's key; it serves through its route", async () => {
    const src = mkdtempSync(join(env.cluster.dir, 'app-'));
    writeFileSync(
      join(src, 'package.json'),
      JSON.stringify({ name: 'helm-hello', scripts: { start: 'node server.js' } }),
    );
    writeFileSync(
      join(src, 'server.js'),
      `require('node:http').createServer((q, s) => s.end('hello from a helm install')).listen(process.env.PORT);`,
    );
    const res = await deploy(base, key, { name: 'helm-hello' }, await tarGzDir(src));
    expect([200, 202], JSON.stringify(res.body)).toContain(res.status);
    const app = await waitForPhase(base, key, 'helm-hello', ['Ready', 'Failed'], 90_000);
    expect(app.phase, JSON.stringify(app)).toBe('Ready');
    const host = new URL(String(app.url)).hostname;
    type Route = { spec: { hostnames: string[]; rules: { backendRefs: { name: string }[] }[] } };
    type Slices = { items: { endpoints: { addresses: string[] }[]; ports: { port: number }[] }[] };
    const route = await waitFor('the HTTPRoute', async () => {
      const r = await env.cluster.api.get<Route>(
        `/apis/gateway.networking.k8s.io/v1/namespaces/${NS}/httproutes/slipway-app-helm-hello`,
      );
      return r.status === 200 ? r.body : undefined;
    });
    expect(route.spec.hostnames).toEqual([host]);
    const service = route.spec.rules[0]?.backendRefs[0]?.name;
    const { items } = await env.cluster.api.must<Slices>(
      'GET',
      `/apis/discovery.k8s.io/v1/namespaces/${NS}/endpointslices?labelSelector=${encodeURIComponent(`kubernetes.io/service-name=${String(service)}`)}`,
    );
    const [slice] = items;
    const answer = await fetchApp(`http://${host}:${slice?.ports[0]?.port}/`, {
      connectTo: String(slice?.endpoints[0]?.addresses[0]),
    });
    expect(answer).toMatchObject({ status: 200, body: 'hello from a helm install' });
  });
});
