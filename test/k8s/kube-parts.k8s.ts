// The Kubernetes parts the runtime is built from, against the real test cluster: the access check
// (reachability, CRDs, RBAC through SelfSubjectAccessReview), the per-app data path objects
// (Service + EndpointSlice + HTTPRoute/Ingress, validated by the real API server and CRD
// schemas) and the sandbox NetworkPolicy. Run with `npm run test:k8s` after test/k8s/build.sh.
import { writeFileSync } from 'node:fs';
import { createServer, connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KubeAccessCheck } from '../../src/kube/access-check.js';
import { requiredAccess } from '../../src/kube/required-access.js';
import { loadKubeConfig } from '../../src/kube/kube-config.js';
import { freePort, startCluster, waitFor, type Cluster } from './cluster.js';

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
  const needs = { routeKind: 'httproute', configMapStore: false } as const;

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
    // all for networkpolicies; list ingresses is granted but not needed with httproute.
    const rules = requiredAccess(needs)
      .filter((r) => r.resource !== 'networkpolicies')
      .map((r) => ({
        apiGroups: [r.group],
        resources: [r.resource],
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
        'RBAC: cannot update secrets in namespace slipway',
        'RBAC: cannot get networkpolicies.networking.k8s.io in namespace slipway',
        'RBAC: cannot create networkpolicies.networking.k8s.io in namespace slipway',
        'RBAC: cannot update networkpolicies.networking.k8s.io in namespace slipway',
        'RBAC: cannot patch networkpolicies.networking.k8s.io in namespace slipway',
      ].sort(),
    );
    expect(status.detail).toContain(
      'RBAC: cannot create, delete sandboxclaims.extensions.agents.x-k8s.io in namespace slipway',
    );
    expect(status.detail).toContain('RBAC: cannot update secrets in namespace slipway');
    // The same account with the ingress route kind also lacks every ingresses verb but list.
    const ingress = new KubeAccessCheck(
      kubeconfigFor('narrow-ingress', cluster.server, token),
      NS,
      { routeKind: 'ingress', configMapStore: true },
    );
    const missing = (await ingress.checkNow()).missing ?? [];
    for (const verb of ['get', 'list', 'create', 'update', 'patch', 'delete']) {
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

// Last: deleting a CRD changes the cluster for everything after it.
describe('KubeAccessCheck with a CRD gone', () => {
  it('names the CRD that is not served', async () => {
    const kc = loadKubeConfig({ kubernetes: { namespace: NS, kubeconfig: cluster.kubeconfig } });
    const check = new KubeAccessCheck(kc, NS, { routeKind: 'httproute', configMapStore: false });
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
