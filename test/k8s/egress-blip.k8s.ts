// Issue 27 item 4: the egress gate has its own readiness. Slipway runs as a pod on the test node,
// with the chart's Services, labels and readiness probe; the EndpointSlice controller follows the
// pod's Ready, and a kube-proxy stand-in routes the egress Service's ClusterIP to its ready
// endpoints. The API server is cut off from Slipway alone: /readyz turns 503, the pod leaves the
// API Service's endpoints, and an app's egress to an allow-listed host still works.
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { testDataPath } from '../support/data-path.js';
import { deploy, fetchApp, waitForPhase } from '../support/deploy.js';
import { MOTO_CREDENTIALS, MOTO_SETUP_TIMEOUT_MS } from '../support/moto.js';
import { tarGzDir } from '../support/tarball.js';
import { startApiLink, type ApiLink } from './api-link.js';
import { find, render } from './chart-tools.js';
import { waitFor, type K8sObject } from './cluster.js';
import { startServiceProxy, type ServiceProxy } from './service-proxy.js';
import { startSlipwayEnv, type SlipwayEnv } from './slipway-env.js';

const NS = 'slipway';
const POD = 'slipway-0';
const KEY = 'egress-blip-key-0123456789abcdef0123';
const SLICES = `/apis/discovery.k8s.io/v1/namespaces/${NS}/endpointslices`;

type Container = {
  name: string;
  image: string;
  ports: object[];
  readinessProbe: object;
  env: { name: string }[];
};
type Template = { metadata: { labels: Record<string, string> }; spec: { containers: Container[] } };
type Slice = {
  metadata: { name: string; labels: Record<string, string> };
  endpoints?: {
    addresses: string[];
    conditions?: { ready?: boolean; serving?: boolean; terminating?: boolean };
    targetRef?: { kind: string; name: string };
  }[];
};
type Egress = { ok: { status: number; body: string } };

describe('Kubernetes: egress survives a readiness blip of the control plane', () => {
  let env: SlipwayEnv;
  let link: ApiLink;
  let proxy: ServiceProxy;
  let target: Server;
  let base: string;
  let appUrl: { host: string; ip: string; port: number };

  beforeAll(async () => {
    const root = mkdtempSync(join(tmpdir(), 'slipway-k8s-blip-'));
    let config: Record<string, unknown> = {};
    env = await startSlipwayEnv(NS, 'slipway-blip-sources', {
      cluster: { endpointSlices: true },
      // Slipway's own pod: the server as `npm start` runs it, on the pod's address.
      otherPod: (pod, ip) => {
        if (pod.metadata?.name !== POD) return undefined;
        const dataDir = join(root, 'data');
        mkdirSync(dataDir, { recursive: true });
        const file = join(root, 'config.yaml');
        const runtime = config.runtime as { kubernetes: object };
        writeFileSync(
          file,
          stringify({
            ...config,
            server: { listen: `${ip}:8080`, dataDir, dataPath: testDataPath(), logLevel: 'info' },
            runtime: {
              ...runtime,
              kubernetes: { ...runtime.kubernetes, egress: { listen: `${ip}:3128` } },
            },
          }),
        );
        return {
          command: process.execPath,
          args: ['--import', 'tsx', 'src/main.ts'],
          env: { ...MOTO_CREDENTIALS, SVC_CONFIG: file },
        };
      },
    });
    const { cluster } = env;
    link = await startApiLink(cluster);
    config = {
      auth: { apiKeys: [{ key: KEY, name: 'alice' }] },
      ...env.config(),
      kubernetes: { namespace: NS, kubeconfig: link.kubeconfig },
      runtime: {
        backend: 'kubernetes',
        egress: { allowPrivate: ['127.0.0.1'] },
        poolSize: 1,
        startTimeout: '15s',
        kubernetes: { claimTimeout: '20s', versions: { node: process.versions.node } },
      },
    };
    const { objects } = await render(join(root, 'helm'));
    for (const name of ['slipway', 'slipway-egress']) {
      await cluster.api.must(
        'POST',
        `/api/v1/namespaces/${NS}/services`,
        find(objects, 'Service', name),
      );
    }
    proxy = await startServiceProxy(cluster.api, NS, 'slipway-egress');
    // The chart's pod, less what the test node does not do (volumes, security context).
    const deployment = find(objects, 'Deployment', 'slipway') as K8sObject & {
      spec: { template: Template };
    };
    const { metadata, spec } = deployment.spec.template;
    const [c] = spec.containers;
    if (!c) throw new Error('the chart renders no container');
    await cluster.api.must('POST', `/api/v1/namespaces/${NS}/pods`, {
      metadata: { name: POD, labels: metadata.labels },
      spec: {
        terminationGracePeriodSeconds: 5,
        containers: [
          {
            name: c.name,
            image: c.image,
            ports: c.ports,
            readinessProbe: c.readinessProbe,
            env: c.env.filter((e) => e.name.startsWith('SVC_POD_')),
          },
        ],
      },
    });
    const ip = await waitFor(
      'the control plane pod Ready',
      async () => {
        const pod = await podStatus();
        return pod.ready ? pod.ip : undefined;
      },
      120_000,
    );
    base = `http://${ip}:8080`;

    target = createServer((_req, res) => res.end('the target says hi'));
    await new Promise<void>((r) => target.listen(0, '127.0.0.1', r));
    const allowed = `127.0.0.1:${(target.address() as AddressInfo).port}`;
    const dir = mkdtempSync(join(tmpdir(), 'k8s-blip-'));
    writeFileSync(join(dir, 'package.json'), '{"name":"blip","main":"server.js"}');
    writeFileSync(
      join(dir, 'server.js'),
      `const http = require('node:http');
const proxy = new URL(process.env.HTTP_PROXY);
http.createServer((req, res) => {
  const q = http.request({ host: proxy.hostname, port: proxy.port, path: 'http://${allowed}/', headers: { host: '${allowed}' } }, (r) => {
    let body = ''; r.on('data', (d) => (body += d)); r.on('end', () => res.end(JSON.stringify({ ok: { status: r.statusCode, body } })));
  });
  q.on('error', (e) => res.end(JSON.stringify({ ok: { status: 0, body: String(e) } })));
  q.end();
}).listen(process.env.PORT);
`,
    );
    const name = 'k8s-blip';
    const res = await deploy(
      base,
      KEY,
      { name, egress: { allowed_hosts: [allowed] } },
      await tarGzDir(dir),
    );
    expect([200, 202], JSON.stringify(res.body)).toContain(res.status);
    const app = await waitForPhase(base, KEY, name, ['Ready', 'Failed'], 60_000);
    expect(app.phase, JSON.stringify(app)).toBe('Ready');
    const slice = await waitFor('the app route', async () => {
      const q = encodeURIComponent(`kubernetes.io/service-name=slipway-app-${name}`);
      const found = await cluster.api.must<{
        items: (Slice & { ports: { port: number }[] })[];
      }>('GET', `${SLICES}?labelSelector=${q}`);
      return found.items[0];
    });
    appUrl = {
      host: new URL(String(app.url)).host.split(':')[0] ?? '',
      ip: slice.endpoints?.[0]?.addresses[0] ?? '',
      port: slice.ports[0]?.port ?? 0,
    };
  }, MOTO_SETUP_TIMEOUT_MS);

  afterAll(async () => {
    target?.close();
    await proxy?.stop();
    await link?.stop();
    await env?.stop();
  });

  const podStatus = async () => {
    const pod = await env.cluster.api.must<{
      status?: { podIP?: string; conditions?: { type: string; status: string }[] };
    }>('GET', `/api/v1/namespaces/${NS}/pods/${POD}`);
    const ready = pod.status?.conditions?.find((c) => c.type === 'Ready')?.status === 'True';
    return { ip: pod.status?.podIP, ready };
  };
  /** Through the app's own route to its pod (no control plane on the way); the app dials out. */
  const egress = async (): Promise<Egress> =>
    JSON.parse(
      (await fetchApp(`http://${appUrl.host}:${appUrl.port}/`, { connectTo: appUrl.ip })).body,
    ) as Egress;
  const readyz = () => fetch(`${base}/readyz`).then((r) => r.status);
  const slicesOfPod = async (service: string) => {
    const q = encodeURIComponent(`kubernetes.io/service-name=${service}`);
    const { items } = await env.cluster.api.must<{ items: Slice[] }>(
      'GET',
      `${SLICES}?labelSelector=${q}`,
    );
    return items.flatMap((s) =>
      (s.endpoints ?? [])
        .filter((e) => e.targetRef?.name === POD)
        .map((e) => ({ slice: s.metadata, ...e })),
    );
  };

  it("publishes the gate's endpoint itself: the egress Service follows the gate, not /readyz", async () => {
    expect(await readyz()).toBe(200);
    expect(await egress()).toEqual({ ok: { status: 200, body: 'the target says hi' } });
    const [gate] = await slicesOfPod('slipway-egress');
    expect(gate?.conditions).toEqual({ ready: true, serving: true, terminating: false });
    expect(gate?.slice.labels['endpointslice.kubernetes.io/managed-by']).toBe('slipway.dev');
  });

  it('lets apps out while the API server is unreachable from Slipway and /readyz is 503', async () => {
    link.cut();
    try {
      await waitFor('/readyz 503', async () => (await readyz()) === 503, 30_000);
      // The kubelet's probe saw it (the chart's period and threshold) and the EndpointSlice
      // controller took the pod out of the API Service's endpoints.
      await waitFor('the pod not Ready', async () => !(await podStatus()).ready, 60_000);
      await waitFor(
        'the API Service without the pod',
        async () => {
          const api = await slicesOfPod('slipway');
          return api.length > 0 && api.every((e) => e.conditions?.ready === false);
        },
        30_000,
      );
      expect(await egress()).toEqual({ ok: { status: 200, body: 'the target says hi' } });
      expect(await readyz()).toBe(503);
    } finally {
      link.restore();
    }
    await waitFor('/readyz 200 again', async () => (await readyz()) === 200, 60_000);
    expect(await egress()).toEqual({ ok: { status: 200, body: 'the target says hi' } });
  });

  it("marks the gate's endpoint terminating when the pod is deleted; the slice goes with the pod", async () => {
    const api = env.cluster.api;
    const q = encodeURIComponent('kubernetes.io/service-name=slipway-egress');
    const list = await api.must<{ metadata: { resourceVersion: string } }>(
      'GET',
      `${SLICES}?labelSelector=${q}`,
    );
    const abort = new AbortController();
    const events = await api.raw(
      'GET',
      `${SLICES}?labelSelector=${q}&watch=1&resourceVersion=${list.metadata.resourceVersion}`,
      undefined,
      undefined,
      abort.signal,
    );
    const seen: { type: string; object: Slice }[] = [];
    const deleted = (async () => {
      let buf = '';
      for await (const chunk of events) {
        buf += (chunk as Buffer).toString('utf8');
        for (let nl = buf.indexOf('\n'); nl >= 0; nl = buf.indexOf('\n')) {
          seen.push(JSON.parse(buf.slice(0, nl)) as { type: string; object: Slice });
          buf = buf.slice(nl + 1);
          if (seen.at(-1)?.type === 'DELETED') return;
        }
      }
    })();
    await api.must('DELETE', `/api/v1/namespaces/${NS}/pods/${POD}`);
    // The watch ends with the slice deleted; the test times out if the garbage collector never does.
    await deleted;
    abort.abort();
    const conditions = seen.map((e) => [e.type, e.object.endpoints?.[0]?.conditions]);
    expect(conditions).toContainEqual([
      'MODIFIED',
      { ready: false, serving: true, terminating: true },
    ]);
    expect(conditions.at(-1)?.[0]).toBe('DELETED');
  }, 60_000);
});
