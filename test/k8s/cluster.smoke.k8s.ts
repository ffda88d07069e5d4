// Smoke test of the test cluster itself: real API server, admission, CRD validation, RBAC, garbage
// collection and the agent-sandbox controller's warm pool and claims; the test node runs each pod
// as a local process on its own address. Run with `npm run test:k8s` after test/k8s/build.sh.
import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  startCluster,
  startTestNode,
  waitFor,
  type Cluster,
  type K8sObject,
  type TestNode,
} from './cluster.js';

const EXT = '/apis/extensions.agents.x-k8s.io/v1beta1';
const CORE = '/apis/agents.x-k8s.io/v1beta1';
const NS = 'smoke';

// The pod's "agent": answers /health on the pod's own loopback address.
const AGENT = `
const http = require('node:http');
http.createServer((req, res) => {
  if (req.url === '/health') {
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ ok: true, pod: process.env.POD_NAME, ip: process.env.POD_IP }));
  } else { res.statusCode = 404; res.end(); }
}).listen(8080, process.env.POD_IP);
process.on('SIGTERM', () => process.exit(0));
`;

function health(ip: string): Promise<{ ok: boolean; pod: string; ip: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: ip, port: 8080, path: '/health', timeout: 2000 }, (res) => {
      let body = '';
      res.on('data', (d: Buffer) => (body += d.toString()));
      res.on('end', () => {
        try {
          resolve(JSON.parse(body) as { ok: boolean; pod: string; ip: string });
        } catch (err) {
          reject(err instanceof Error ? err : new Error(String(err)));
        }
      });
    });
    req.on('error', reject);
    req.end();
  });
}

type Cond = { type: string; status: string; reason?: string };
const isTrue = (o: K8sObject | undefined, type = 'Ready') =>
  ((o?.status?.conditions ?? []) as Cond[]).some((c) => c.type === type && c.status === 'True');

describe('test cluster (real kube-apiserver + agent-sandbox controller, test node)', () => {
  let cluster: Cluster;
  let node: TestNode;
  const numbers: Record<string, number> = {};

  beforeAll(async () => {
    const t0 = Date.now();
    cluster = await startCluster();
    numbers.clusterStartMs = Date.now() - t0;
    node = await startTestNode({
      cluster,
      namespace: NS,
      agentCommand: () => ({ command: process.execPath, args: ['-e', AGENT] }),
    });
    const api = cluster.api;
    await api.must('POST', '/api/v1/namespaces', { metadata: { name: NS } });
    await waitFor(
      'default service account in the namespace',
      async () =>
        (await api.get(`/api/v1/namespaces/${NS}/serviceaccounts/default`)).status === 200,
    );
  });

  afterAll(async () => {
    await node?.stop();
    await cluster?.stop();
    // Numbers for the report (cluster.timings: ms from startCluster() to each step).
    console.log(JSON.stringify({ timings: cluster?.timings, ...numbers }, null, 2));
  });

  it('serves the Gateway API CRDs and validates against their schemas', async () => {
    const api = cluster.api;
    const route = (name: string, port: unknown) => ({
      apiVersion: 'gateway.networking.k8s.io/v1',
      kind: 'HTTPRoute',
      metadata: { name, namespace: NS },
      spec: {
        parentRefs: [{ name: 'gw' }],
        rules: [{ backendRefs: [{ name: 'svc', port }] }],
      },
    });
    const base = `/apis/gateway.networking.k8s.io/v1/namespaces/${NS}/httproutes`;
    expect((await api.post(base, route('ok', 8080))).status).toBe(201);
    // port must be 1..65535: the CRD's OpenAPI schema, enforced by the API server.
    const bad = await api.post(base, route('bad', 70000));
    expect(bad.status).toBe(422);
  });

  it('fills a warm pool, binds a claim to a warm sandbox, and deletion cascades to the pod', async () => {
    const api = cluster.api;
    await api.must('POST', `${EXT}/namespaces/${NS}/sandboxtemplates`, {
      apiVersion: 'extensions.agents.x-k8s.io/v1beta1',
      kind: 'SandboxTemplate',
      metadata: { name: 'agent' },
      spec: {
        podTemplate: {
          metadata: { labels: { 'app.kubernetes.io/part-of': 'slipway-smoke' } },
          spec: {
            containers: [
              {
                name: 'agent',
                image: 'slipway/agent:test',
                command: ['sleep', 'infinity'],
                ports: [{ name: 'http', containerPort: 8080 }],
                readinessProbe: { httpGet: { path: '/health', port: 8080 }, periodSeconds: 1 },
                env: [
                  { name: 'POD_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
                ],
              },
            ],
          },
        },
      },
    });
    const tPool = Date.now();
    await api.must('POST', `${EXT}/namespaces/${NS}/sandboxwarmpools`, {
      apiVersion: 'extensions.agents.x-k8s.io/v1beta1',
      kind: 'SandboxWarmPool',
      metadata: { name: 'agent' },
      spec: { replicas: 2, sandboxTemplateRef: { name: 'agent' } },
    });
    await waitFor(
      'warm pool readyReplicas = 2',
      async () => {
        const pool = await api.must('GET', `${EXT}/namespaces/${NS}/sandboxwarmpools/agent`);
        return pool.status?.readyReplicas === 2;
      },
      60_000,
    );
    numbers.warmPoolReadyMs = Date.now() - tPool;

    type List = { items: K8sObject[] };
    const sandboxes = await api.must<List>('GET', `${CORE}/namespaces/${NS}/sandboxes`);
    expect(sandboxes.items).toHaveLength(2);
    const warm = new Set(sandboxes.items.map((s) => s.metadata?.name));
    for (const s of sandboxes.items) expect(isTrue(s)).toBe(true);
    const pods = await api.must<List>('GET', `/api/v1/namespaces/${NS}/pods`);
    expect(pods.items).toHaveLength(2);
    for (const p of pods.items) {
      expect(p.spec?.nodeName).toBe('test-node');
      expect(p.status?.phase).toBe('Running');
      const ip = p.status?.podIP as string;
      expect(ip).toMatch(/^198\.1[89]\.\d+\.\d+$/);
      expect(await health(ip)).toMatchObject({ ok: true, pod: p.metadata?.name, ip });
    }

    // Claim: binds to one of the warm sandboxes.
    const tClaim = Date.now();
    await api.must('POST', `${EXT}/namespaces/${NS}/sandboxclaims`, {
      apiVersion: 'extensions.agents.x-k8s.io/v1beta1',
      kind: 'SandboxClaim',
      metadata: { name: 'app-1' },
      spec: { warmPoolRef: { name: 'agent' } },
    });
    const claim = await waitFor(
      'claim bound and Ready',
      async () => {
        const c = await api.must('GET', `${EXT}/namespaces/${NS}/sandboxclaims/app-1`);
        const sb = c.status?.sandbox as { name?: string } | undefined;
        return sb?.name && isTrue(c) ? c : undefined;
      },
      30_000,
      20,
    );
    numbers.claimBindMs = Date.now() - tClaim;
    const bound = claim.status?.sandbox as { name: string; podIPs?: string[] };
    expect(warm.has(bound.name)).toBe(true);
    const ip = bound.podIPs?.[0] ?? '';
    expect(ip).toMatch(/^198\.1[89]\.\d+\.\d+$/);
    const h = await health(ip);
    expect(h.ok).toBe(true);
    const podName = h.pod;

    // Reading it as v1alpha1 goes through the controller's CRD conversion webhook.
    const old = await api.must(
      'GET',
      `/apis/extensions.agents.x-k8s.io/v1alpha1/namespaces/${NS}/sandboxclaims/app-1`,
    );
    expect(old.apiVersion).toBe('extensions.agents.x-k8s.io/v1alpha1');
    expect((old.status?.sandbox as { name?: string } | undefined)?.name).toBe(bound.name);

    // The pool refills behind the claim.
    const tRefill = Date.now();
    await waitFor(
      'warm pool refilled to 2',
      async () => {
        const pool = await api.must('GET', `${EXT}/namespaces/${NS}/sandboxwarmpools/agent`);
        const all = await api.must<List>('GET', `${CORE}/namespaces/${NS}/sandboxes`);
        return pool.status?.readyReplicas === 2 && all.items.length === 3;
      },
      60_000,
    );
    numbers.poolRefillMs = Date.now() - tRefill;

    // Deleting the claim removes its sandbox (garbage collector) and pod (GC + the node's
    // final delete), and the node stops the process.
    const tDel = Date.now();
    await api.must('DELETE', `${EXT}/namespaces/${NS}/sandboxclaims/app-1`);
    await waitFor(
      'sandbox and pod of the deleted claim gone',
      async () => {
        const sb = await api.get(`${CORE}/namespaces/${NS}/sandboxes/${bound.name}`);
        const pod = await api.get(`/api/v1/namespaces/${NS}/pods/${podName}`);
        return sb.status === 404 && pod.status === 404 && !node.running().has(`${NS}/${podName}`);
      },
      60_000,
    );
    numbers.claimDeleteToPodGoneMs = Date.now() - tDel;
    await expect(health(ip)).rejects.toThrow();
  });

  it('enforces RBAC on a service account with a narrow Role', async () => {
    const api = cluster.api;
    await api.must('POST', `/api/v1/namespaces/${NS}/serviceaccounts`, {
      metadata: { name: 'narrow' },
    });
    await api.must('POST', `/apis/rbac.authorization.k8s.io/v1/namespaces/${NS}/roles`, {
      metadata: { name: 'read-pods' },
      rules: [{ apiGroups: [''], resources: ['pods'], verbs: ['get', 'list'] }],
    });
    await api.must('POST', `/apis/rbac.authorization.k8s.io/v1/namespaces/${NS}/rolebindings`, {
      metadata: { name: 'narrow-read-pods' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'read-pods' },
      subjects: [{ kind: 'ServiceAccount', name: 'narrow', namespace: NS }],
    });
    const tr = await api.must<{ status: { token: string } }>(
      'POST',
      `/api/v1/namespaces/${NS}/serviceaccounts/narrow/token`,
      {
        apiVersion: 'authentication.k8s.io/v1',
        kind: 'TokenRequest',
        spec: { expirationSeconds: 600 },
      },
    );
    const sa = api.as(tr.status.token);
    expect((await sa.get(`/api/v1/namespaces/${NS}/pods`)).status).toBe(200);
    expect((await sa.get(`/api/v1/namespaces/${NS}/secrets`)).status).toBe(403);
    expect((await sa.get('/api/v1/namespaces/default/pods')).status).toBe(403);
    const claim = await sa.post(`${EXT}/namespaces/${NS}/sandboxclaims`, {
      apiVersion: 'extensions.agents.x-k8s.io/v1beta1',
      kind: 'SandboxClaim',
      metadata: { name: 'not-allowed' },
      spec: { warmPoolRef: { name: 'agent' } },
    });
    expect(claim.status).toBe(403);
  });
});
