// The Kubernetes parts the runtime is built from, against the real test cluster: the access check
// (reachability, CRDs, RBAC through SelfSubjectAccessReview), the per-app data path objects
// (Service + EndpointSlice + HTTPRoute/Ingress, validated by the real API server and CRD
// schemas) and the sandbox NetworkPolicy. Run with `npm run test:k8s` after test/k8s/build.sh.
import { writeFileSync } from 'node:fs';
import { createServer, connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KubeAccessCheck } from '../../src/cluster/access-check.js';
import { requiredAccess } from '../../src/cluster/required-access.js';
import { AppRoutes, ensureFallbackRoute } from '../../src/cluster/app-routes.js';
import { loadKubeConfig } from '../../src/cluster/kube-config.js';
import { ensureSandboxNetworkPolicy } from '../../src/cluster/sandbox-network-policy.js';
import { freePort, startCluster, waitFor, type Cluster, type K8sObject } from './cluster.js';

const NS = 'slipway';
const RBAC_API = '/apis/rbac.authorization.k8s.io/v1';

let cluster: Cluster;
const numbers: Record<string, number> = {};

beforeAll(async () => {
  const t0 = Date.now();
  cluster = await startCluster();
  numbers.clusterStartMs = Date.now() - t0;
  await cluster.api.must('POST', '/api/v1/namespaces', { metadata: { name: NS } });
  await waitFor(
    'default service account in the namespace',
    async () =>
      (await cluster.api.get(`/api/v1/namespaces/${NS}/serviceaccounts/default`)).status === 200,
  );
});

afterAll(async () => {
  await cluster?.stop();
  console.log(JSON.stringify({ timings: cluster?.timings, ...numbers }, null, 2));
});

/** A kubeconfig file for `server` with `token`, loaded through the project's loader. */
function kubeconfigFor(name: string, server: string, token: string) {
  const file = join(cluster.dir, `${name}.kubeconfig`);
  writeFileSync(
    file,
    [
      'apiVersion: v1',
      'kind: Config',
      'clusters:',
      `- name: c`,
      `  cluster: {server: "${server}", certificate-authority-data: ${Buffer.from(cluster.ca).toString('base64')}}`,
      'users:',
      `- name: u`,
      `  user: {token: "${token}"}`,
      'contexts:',
      '- name: x',
      '  context: {cluster: c, user: u}',
      'current-context: x',
      '',
    ].join('\n'),
  );
  return loadKubeConfig({ kubernetes: { namespace: NS, kubeconfig: file } });
}

/** A ServiceAccount bound to a Role with `rules`, and a token for it (TokenRequest API). */
async function serviceAccount(name: string, rules: unknown[]): Promise<string> {
  const api = cluster.api;
  await api.must('POST', `/api/v1/namespaces/${NS}/serviceaccounts`, { metadata: { name } });
  await api.must('POST', `${RBAC_API}/namespaces/${NS}/roles`, { metadata: { name }, rules });
  await api.must('POST', `${RBAC_API}/namespaces/${NS}/rolebindings`, {
    metadata: { name },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name },
    subjects: [{ kind: 'ServiceAccount', name, namespace: NS }],
  });
  const tr = await api.must<{ status: { token: string } }>(
    'POST',
    `/api/v1/namespaces/${NS}/serviceaccounts/${name}/token`,
    {
      apiVersion: 'authentication.k8s.io/v1',
      kind: 'TokenRequest',
      spec: { expirationSeconds: 600 },
    },
  );
  return tr.status.token;
}

/** A TCP relay on `port` to the API server, started on demand: the API "comes back". */
function relayTo(port: number, target: URL): Promise<{ close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  const server = createServer((client) => {
    const upstream = connect(Number(target.port), target.hostname);
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
      s.on('error', () => s.destroy());
    }
    client.pipe(upstream).pipe(client);
  });
  // The client keeps connections alive: close them, or server.close() would wait for them.
  const close = () =>
    new Promise<void>((resolve) => {
      server.close(() => resolve());
      sockets.forEach((s) => s.destroy());
    });
  return new Promise((resolve) => server.listen(port, '127.0.0.1', () => resolve({ close })));
}

describe('KubeAccessCheck', () => {
  const needs = { routeKind: 'httproute', configMapStore: false, networkPolicy: true } as const;

  it('is ok with the admin kubeconfig, and not before its first check', async () => {
    const kc = loadKubeConfig({ kubernetes: { namespace: NS, kubeconfig: cluster.kubeconfig } });
    const check = new KubeAccessCheck(kc, NS, needs);
    expect(check.status()).toEqual({ ok: false, detail: 'Kubernetes access not checked yet' });
    const t0 = Date.now();
    expect(await check.checkNow()).toEqual({ ok: true });
    numbers.accessCheckAdminMs = Date.now() - t0;
    expect(check.status()).toEqual({ ok: true });
  });

  it('names exactly the verbs a narrow service account lacks', async () => {
    // Everything Slipway needs except: create/delete sandboxclaims, update secrets, and no rule at
    // all for networkpolicies.
    const rules = requiredAccess(needs)
      .filter((r) => r.resource !== 'networkpolicies')
      .map((r) => ({
        apiGroups: [r.group],
        resources: [r.resource],
        ...(r.resourceNames ? { resourceNames: [...r.resourceNames] } : {}),
        verbs: r.verbs.filter(
          (v) =>
            !(r.resource === 'sandboxclaims' && (v === 'create' || v === 'delete')) &&
            !(r.resource === 'secrets' && v === 'update'),
        ),
      }));
    const token = await serviceAccount('narrow', rules);
    const check = new KubeAccessCheck(kubeconfigFor('narrow', cluster.server, token), NS, needs);
    const status = await check.checkNow();
    expect(status.ok).toBe(false);
    expect(status.missing?.sort()).toEqual(
      [
        'RBAC: cannot create sandboxclaims.extensions.agents.x-k8s.io in namespace slipway',
        'RBAC: cannot delete sandboxclaims.extensions.agents.x-k8s.io in namespace slipway',
        'RBAC: cannot update secrets/slipway-sandbox-enroll in namespace slipway',
        'RBAC: cannot create networkpolicies.networking.k8s.io in namespace slipway',
        'RBAC: cannot patch networkpolicies.networking.k8s.io in namespace slipway',
      ].sort(),
    );
    expect(status.detail).toContain(
      'RBAC: cannot create, delete sandboxclaims.extensions.agents.x-k8s.io in namespace slipway',
    );
    expect(status.detail).toContain(
      'RBAC: cannot update secrets/slipway-sandbox-enroll in namespace slipway',
    );
    // The same account with the ingress route kind also lacks every ingresses verb it uses.
    const ingress = new KubeAccessCheck(
      kubeconfigFor('narrow-ingress', cluster.server, token),
      NS,
      { routeKind: 'ingress', configMapStore: true, networkPolicy: true },
    );
    const missing = (await ingress.checkNow()).missing ?? [];
    for (const verb of ['list', 'create', 'patch', 'delete']) {
      expect(missing).toContain(
        `RBAC: cannot ${verb} ingresses.networking.k8s.io in namespace slipway`,
      );
    }
    expect(missing).toContain('RBAC: cannot watch configmaps in namespace slipway');
    expect(missing.some((m) => m.includes('httproutes'))).toBe(false);
    // In another namespace the Role grants nothing: every verb is named.
    const elsewhere = await new KubeAccessCheck(
      kubeconfigFor('narrow-other', cluster.server, token),
      'default',
      needs,
    ).checkNow();
    const total = requiredAccess(needs).reduce((n, r) => n + r.verbs.length, 0);
    expect(elsewhere.missing).toHaveLength(total);
  });

  it('says the credentials are refused for a bad token', async () => {
    const check = new KubeAccessCheck(
      kubeconfigFor('bad', cluster.server, 'not-a-token'),
      NS,
      needs,
    );
    const status = await check.checkNow();
    expect(status).toEqual({
      ok: false,
      detail: 'API: the API server refused the credentials (401)',
      missing: ['API: the API server refused the credentials (401)'],
    });
  });

  it('says the API is unreachable, and turns ok by itself once it answers', async () => {
    const port = await freePort();
    const kc = kubeconfigFor('relay', `https://127.0.0.1:${port}`, cluster.token);
    const check = new KubeAccessCheck(kc, NS, { ...needs, failingIntervalMs: 200 });
    check.start();
    try {
      await waitFor('first check done', async () => check.status().missing !== undefined);
      const down = check.status();
      expect(down.ok).toBe(false);
      expect(down.detail).toMatch(/^API: unreachable: .*ECONNREFUSED/);
      const relay = await relayTo(port, new URL(cluster.server));
      try {
        await waitFor('status ok through the relay', async () => check.status().ok, 30_000);
        expect(check.status()).toEqual({ ok: true });
      } finally {
        await relay.close();
      }
    } finally {
      check.stop();
    }
  });

  it('gives up on an API server that accepts but never answers', async () => {
    const port = await freePort();
    const held: Socket[] = [];
    const silent = createServer((s) => held.push(s));
    await new Promise<void>((r) => silent.listen(port, '127.0.0.1', r));
    try {
      const kc = kubeconfigFor('silent', `https://127.0.0.1:${port}`, cluster.token);
      const status = await new KubeAccessCheck(kc, NS, { ...needs, timeoutMs: 300 }).checkNow();
      expect(status.ok).toBe(false);
      expect(status.detail).toMatch(/^API: unreachable: .*abort/i);
    } finally {
      held.forEach((s) => s.destroy());
      await new Promise((r) => silent.close(r));
    }
  });
});

const GW = `/apis/gateway.networking.k8s.io/v1/namespaces/${NS}/httproutes`;
const ING = `/apis/networking.k8s.io/v1/namespaces/${NS}/ingresses`;
const SVC = `/api/v1/namespaces/${NS}/services`;
const EPS = `/apis/discovery.k8s.io/v1/namespaces/${NS}/endpointslices`;
const admin = () =>
  loadKubeConfig({ kubernetes: { namespace: NS, kubeconfig: cluster.kubeconfig } });
const fallback = { serviceName: 'slipway', port: 8080 };
type Slice = K8sObject & {
  addressType: string;
  endpoints: { addresses: string[] }[];
  ports: { name: string; port: number }[];
};

describe('AppRoutes (httproute)', () => {
  const gateway = { name: 'apps', namespace: 'gateways', sectionName: 'http' };
  const app = {
    appId: 'hello',
    appName: 'hello',
    host: 'hello.apps.example.com',
    podIP: '10.244.0.5',
    port: 3000,
  };

  it('publishes a selectorless Service, an EndpointSlice with the pod, and an HTTPRoute for the host', async () => {
    const routes = new AppRoutes(admin(), NS, { kind: 'httproute', gateway, fallback });
    await routes.publish(app);
    const svc = await cluster.api.must('GET', `${SVC}/slipway-app-hello`);
    expect(svc.spec?.selector).toBeUndefined();
    expect(svc.spec?.ports).toEqual([
      { name: 'http', protocol: 'TCP', port: 80, targetPort: 3000 },
    ]);
    expect(svc.metadata?.labels).toMatchObject({
      'app.kubernetes.io/managed-by': 'slipway',
      'slipway.dev/app-id': 'hello',
    });
    expect(svc.metadata?.annotations?.['slipway.dev/pod-ip']).toBe('10.244.0.5');

    const slice = await cluster.api.must<Slice>('GET', `${EPS}/slipway-app-hello`);
    expect(slice.metadata?.labels?.['kubernetes.io/service-name']).toBe('slipway-app-hello');
    expect(slice.addressType).toBe('IPv4');
    expect(slice.endpoints.map((e) => e.addresses)).toEqual([['10.244.0.5']]);
    expect(slice.ports).toEqual([{ name: 'http', protocol: 'TCP', port: 3000 }]);
    expect(slice.metadata?.ownerReferences?.[0]).toMatchObject({
      kind: 'Service',
      uid: svc.metadata?.uid,
    });

    // Stored through the Gateway API CRD schema: its defaults (the "/" prefix match) are filled in.
    const route = await cluster.api.must('GET', `${GW}/slipway-app-hello`);
    expect(route.spec).toMatchObject({
      hostnames: ['hello.apps.example.com'],
      parentRefs: [{ group: 'gateway.networking.k8s.io', kind: 'Gateway', ...gateway }],
      rules: [
        {
          backendRefs: [{ name: 'slipway-app-hello', port: 80 }],
          matches: [{ path: { type: 'PathPrefix', value: '/' } }],
        },
      ],
    });
    expect(await routes.published()).toEqual(
      new Map([['hello', { host: 'hello.apps.example.com', podIP: '10.244.0.5' }]]),
    );
  });

  it('publishing again with a new pod IP replaces the endpoint in place', async () => {
    const routes = new AppRoutes(admin(), NS, { kind: 'httproute', gateway, fallback });
    const before = await cluster.api.must('GET', `${SVC}/slipway-app-hello`);
    await routes.publish({ ...app, podIP: '10.244.0.6', port: 3001 });
    const slice = await cluster.api.must<Slice>('GET', `${EPS}/slipway-app-hello`);
    expect(slice.endpoints.map((e) => e.addresses)).toEqual([['10.244.0.6']]);
    expect(slice.ports).toEqual([{ name: 'http', protocol: 'TCP', port: 3001 }]);
    const after = await cluster.api.must('GET', `${SVC}/slipway-app-hello`);
    expect(after.metadata?.uid).toBe(before.metadata?.uid);
    expect(after.metadata?.annotations?.['slipway.dev/pod-ip']).toBe('10.244.0.6');
    const list = await cluster.api.must<{ items: K8sObject[] }>('GET', EPS);
    expect(
      list.items.filter((s) => s.metadata?.name?.startsWith('slipway-app-hello')),
    ).toHaveLength(1);
    expect((await routes.published()).get('hello')).toEqual({
      host: 'hello.apps.example.com',
      podIP: '10.244.0.6',
    });
  });

  it('lists every published app, and withdraw removes all three objects, twice without error', async () => {
    const routes = new AppRoutes(admin(), NS, { kind: 'httproute', gateway, fallback });
    // The longest app name: the object name is cut to 63 with a hash, still a valid Service name.
    const long = 'a'.repeat(63);
    await routes.publish({
      appId: long,
      appName: long,
      host: `${long}.apps.example.com`,
      podIP: 'fd00::7',
      port: 8080,
    });
    const names = (await cluster.api.must<{ items: K8sObject[] }>('GET', SVC)).items.map(
      (s) => s.metadata?.name ?? '',
    );
    const longName = names.find((n) => n.startsWith('slipway-app-aaa')) ?? '';
    expect(longName).toMatch(/^slipway-app-a+-[0-9a-f]{8}$/);
    expect(longName.length).toBeLessThanOrEqual(63);
    expect((await cluster.api.must<Slice>('GET', `${EPS}/${longName}`)).addressType).toBe('IPv6');
    expect([...(await routes.published()).keys()].sort()).toEqual([long, 'hello']);

    await routes.withdraw('hello');
    for (const base of [SVC, EPS, GW]) {
      expect((await cluster.api.get(`${base}/slipway-app-hello`)).status).toBe(404);
    }
    await routes.withdraw('hello');
    expect([...(await routes.published()).keys()]).toEqual([long]);
    await routes.withdraw(long);
    expect((await routes.published()).size).toBe(0);
  });

  it('refuses a host that is not a DNS name and a port out of range, writing nothing', async () => {
    const routes = new AppRoutes(admin(), NS, { kind: 'httproute', gateway, fallback });
    for (const host of [
      'Hello.example.com',
      '*.apps.example.com',
      'a_b.example.com',
      '10.0.0.1',
      '',
      `${'x'.repeat(64)}.example.com`,
    ]) {
      await expect(routes.publish({ ...app, host })).rejects.toThrow(
        /host ".*" is not a valid DNS name/,
      );
    }
    for (const port of [0, 70000, 80.5]) {
      await expect(routes.publish({ ...app, port })).rejects.toThrow(
        /port .* is out of range \(1-65535\)/,
      );
    }
    await expect(routes.publish({ ...app, podIP: 'pod' })).rejects.toThrow(/not an IP address/);
    // The API server refuses these in an EndpointSlice; refused here first, with a clear message.
    for (const podIP of ['127.0.0.5', '::1', '169.254.1.1', 'fe80::1', '0.0.0.0']) {
      await expect(routes.publish({ ...app, podIP })).rejects.toThrow(
        /is loopback, link-local or unspecified/,
      );
    }
    await expect(routes.withdraw('bad id!')).rejects.toThrow(/not a valid Kubernetes label value/);
    expect(() => new AppRoutes(admin(), NS, { kind: 'httproute', fallback })).toThrow(
      /needs a gateway/,
    );
    expect((await cluster.api.get(`${SVC}/slipway-app-hello`)).status).toBe(404);
    expect((await routes.published()).size).toBe(0);
  });

  it('writes the wildcard fallback route to the control plane Service, idempotently, not listed as an app', async () => {
    const opts = { kind: 'httproute' as const, gateway, fallback, appsDomain: 'apps.example.com' };
    await ensureFallbackRoute(admin(), NS, opts);
    await ensureFallbackRoute(admin(), NS, opts);
    const route = await cluster.api.must('GET', `${GW}/slipway-apps-fallback`);
    expect(route.spec).toMatchObject({
      hostnames: ['*.apps.example.com'],
      rules: [{ backendRefs: [{ name: 'slipway', port: 8080 }] }],
    });
    const routes = new AppRoutes(admin(), NS, { kind: 'httproute', gateway, fallback });
    expect((await routes.published()).size).toBe(0);
    await expect(ensureFallbackRoute(admin(), NS, { ...opts, appsDomain: '*.x' })).rejects.toThrow(
      /apps domain "\*\.x" is not a valid DNS name/,
    );
  });
});

describe('AppRoutes (ingress)', () => {
  const app = {
    appId: 'web',
    appName: 'web',
    host: 'web.apps.example.com',
    podIP: '10.244.1.9',
    port: 8000,
  };

  it('publishes, republishes, lists and withdraws with an Ingress', async () => {
    const routes = new AppRoutes(admin(), NS, {
      kind: 'ingress',
      ingressClassName: 'nginx',
      fallback,
    });
    await routes.publish(app);
    const ing = await cluster.api.must('GET', `${ING}/slipway-app-web`);
    expect(ing.spec).toEqual({
      ingressClassName: 'nginx',
      rules: [
        {
          host: 'web.apps.example.com',
          http: {
            paths: [
              {
                path: '/',
                pathType: 'Prefix',
                backend: { service: { name: 'slipway-app-web', port: { number: 80 } } },
              },
            ],
          },
        },
      ],
    });
    await routes.publish({ ...app, podIP: '10.244.1.10' });
    const slice = await cluster.api.must<Slice>('GET', `${EPS}/slipway-app-web`);
    expect(slice.endpoints.map((e) => e.addresses)).toEqual([['10.244.1.10']]);
    expect(await routes.published()).toEqual(
      new Map([['web', { host: 'web.apps.example.com', podIP: '10.244.1.10' }]]),
    );
    await routes.withdraw('web');
    for (const base of [SVC, EPS, ING]) {
      expect((await cluster.api.get(`${base}/slipway-app-web`)).status).toBe(404);
    }
    expect((await routes.published()).size).toBe(0);

    await routes.ensureFallback('apps.example.com');
    const fb = await cluster.api.must('GET', `${ING}/slipway-apps-fallback`);
    expect((fb.spec?.rules as { host: string }[])[0]?.host).toBe('*.apps.example.com');
  });
});

describe('ensureSandboxNetworkPolicy', () => {
  const opts = {
    sandboxSelector: { 'app.kubernetes.io/part-of': 'slipway-sandbox' },
    controlPlaneSelector: { 'app.kubernetes.io/name': 'slipway' },
    egressGatePort: 3128,
    agentPort: 7070,
    appPort: 8080,
    ingressFrom: [
      { namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'ingress' } } },
    ],
  };
  const NP = `/apis/networking.k8s.io/v1/namespaces/${NS}/networkpolicies`;

  it('is accepted and has exactly the egress to the gate and the ingress from control plane and gateway', async () => {
    await ensureSandboxNetworkPolicy(admin(), NS, opts);
    const np = await cluster.api.must('GET', `${NP}/slipway-sandboxes`);
    expect(np.spec?.podSelector).toEqual({ matchLabels: opts.sandboxSelector });
    expect(np.spec?.policyTypes).toEqual(['Ingress', 'Egress']);
    expect(np.spec?.egress).toEqual([
      {
        to: [{ podSelector: { matchLabels: { 'app.kubernetes.io/name': 'slipway' } } }],
        ports: [{ protocol: 'TCP', port: 3128 }],
      },
    ]);
    expect(np.spec?.ingress).toEqual([
      {
        from: [{ podSelector: { matchLabels: { 'app.kubernetes.io/name': 'slipway' } } }],
        ports: [
          { protocol: 'TCP', port: 7070 },
          { protocol: 'TCP', port: 8080 },
        ],
      },
      { from: opts.ingressFrom, ports: [{ protocol: 'TCP', port: 8080 }] },
    ]);
  });

  it('updates in place, and drops the gateway rule when no peers are given', async () => {
    const before = await cluster.api.must('GET', `${NP}/slipway-sandboxes`);
    await ensureSandboxNetworkPolicy(admin(), NS, {
      ...opts,
      egressGatePort: 3129,
      ingressFrom: [],
    });
    const np = await cluster.api.must('GET', `${NP}/slipway-sandboxes`);
    expect(np.metadata?.uid).toBe(before.metadata?.uid);
    expect((np.spec?.egress as { ports: unknown[] }[])[0]?.ports).toEqual([
      { protocol: 'TCP', port: 3129 },
    ]);
    expect(np.spec?.ingress).toHaveLength(1);
  });

  it('refuses empty or overlapping selectors and bad ports', async () => {
    await expect(
      ensureSandboxNetworkPolicy(admin(), NS, { ...opts, sandboxSelector: {} }),
    ).rejects.toThrow(/empty selector/);
    await expect(
      ensureSandboxNetworkPolicy(admin(), NS, {
        ...opts,
        controlPlaneSelector: opts.sandboxSelector,
      }),
    ).rejects.toThrow(/matches sandbox pods/);
    await expect(
      ensureSandboxNetworkPolicy(admin(), NS, { ...opts, egressGatePort: 0 }),
    ).rejects.toThrow(/egressGatePort 0 is out of range/);
  });
});

// Last: deleting a CRD changes the cluster for everything after it.
describe('KubeAccessCheck with a CRD gone', () => {
  it('names the CRD that is not served', async () => {
    const kc = loadKubeConfig({ kubernetes: { namespace: NS, kubeconfig: cluster.kubeconfig } });
    const check = new KubeAccessCheck(kc, NS, {
      routeKind: 'httproute',
      configMapStore: false,
      networkPolicy: true,
    });
    await cluster.api.must(
      'DELETE',
      '/apis/apiextensions.k8s.io/v1/customresourcedefinitions/sandboxwarmpools.extensions.agents.x-k8s.io',
    );
    await waitFor('warm pools no longer served', async () => {
      const res = await cluster.api.get(`/apis/extensions.agents.x-k8s.io/v1beta1`);
      const names = (res.body as { resources?: { name: string }[] }).resources?.map((r) => r.name);
      return !names?.includes('sandboxwarmpools');
    });
    const status = await check.checkNow();
    expect(status).toEqual({
      ok: false,
      detail: 'CRD: sandboxwarmpools.extensions.agents.x-k8s.io (v1beta1) is not served',
      missing: ['CRD: sandboxwarmpools.extensions.agents.x-k8s.io (v1beta1) is not served'],
    });
  });
});
