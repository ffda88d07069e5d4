// Slipway end to end on the test cluster: the real server with runtime.backend kubernetes, its
// sources in moto's S3 (agents pull pre-signed URLs), real claims bound by the agent-sandbox
// controller, the pod agent run by the test node. Everything through the public API and app URLs.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deploy, fetchApp, waitForPhase } from '../support/deploy.js';
import { MOTO_SETUP_TIMEOUT_MS } from '../support/moto.js';
import { call, startTestServer, type RawConfig, type TestServer } from '../support/server.js';
import { tarGzDir } from '../support/tarball.js';
import { freePort, waitFor, type Cluster, type TestNode } from './cluster.js';
import { startSlipwayEnv, type SlipwayEnv } from './slipway-env.js';

const NS = 'slipway';
const EXT = '/apis/extensions.agents.x-k8s.io/v1beta1';
const ALICE = 'alice-k8s-e2e-key-0123456789abcdef';
const BOB = 'bob-k8s-e2e-key-0123456789abcdef';
const ADMIN = 'ops-k8s-e2e-key-0123456789abcdef';
const BUCKET = 'slipway-k8s-sources';

type App = {
  app_id: string;
  name: string;
  phase: string;
  url?: string;
  reason?: string;
  message?: string;
};

function appSource(text: string): Promise<Buffer> {
  const dir = mkdtempSync(join(tmpdir(), 'k8s-app-'));
  writeFileSync(join(dir, 'package.json'), '{"name":"k8s-app","main":"server.js"}');
  writeFileSync(
    join(dir, 'server.js'),
    `require('node:http').createServer((q, s) => s.end(${JSON.stringify(text)})).listen(process.env.PORT);\n` +
      `console.log('listening for ${text}');\n`,
  );
  return tarGzDir(dir);
}

describe('Slipway on Kubernetes (real API server, agent-sandbox, S3 sources)', () => {
  let env: SlipwayEnv;
  let cluster: Cluster;
  let node: TestNode;
  let server: TestServer;
  let dataDir: string;
  let config: RawConfig;
  let gatePort: number;

  const claimsOf = async (appId: string) =>
    (
      await cluster.api.must<{ items: { metadata: { name: string } }[] }>(
        'GET',
        `${EXT}/namespaces/${NS}/sandboxclaims?labelSelector=${encodeURIComponent(`slipway.dev/app-id=${appId}`)}`,
      )
    ).items;

  beforeAll(async () => {
    env = await startSlipwayEnv(NS, BUCKET);
    ({ cluster, node } = env);
    dataDir = mkdtempSync(join(tmpdir(), 'slipway-k8s-e2e-'));
    gatePort = await freePort();
    config = {
      auth: {
        apiKeys: [
          { key: ALICE, name: 'alice' },
          { key: BOB, name: 'bob' },
          { key: ADMIN, name: 'ops', role: 'admin' },
        ],
      },
      ...env.config(),
      runtime: {
        backend: 'kubernetes',
        egress: { allowPrivate: ['127.0.0.1'] },
        poolSize: 1,
        startTimeout: '15s',
        kubernetes: {
          claimTimeout: '20s',
          versions: { node: process.versions.node },
          // One port across restarts: warm pods keep the gate address they were made with.
          egress: { listen: `127.0.0.1:${gatePort}`, address: '127.0.0.1' },
        },
      },
    };
    server = await startTestServer(config, dataDir);
  }, MOTO_SETUP_TIMEOUT_MS);

  afterAll(async () => {
    await server?.stop();
    await env?.stop();
  });

  const deployed = async (name: string, source: Buffer, token = ALICE): Promise<App> => {
    const res = await deploy(server.baseURL, token, { name }, source);
    expect([200, 202], JSON.stringify(res.body)).toContain(res.status);
    return (await waitForPhase(server.baseURL, token, name, ['Ready', 'Failed'], 60_000)) as App;
  };

  it.each([
    ['static', 'Hello from a static Slipway app'],
    ['node', 'hello from node'],
    ['python', 'hello from python'],
  ])('deploys the %s example into a claimed pod and serves its URL', async (example, text) => {
    const app = await deployed(`k8s-${example}`, await tarGzDir(join('examples', example)));
    expect(app.phase, JSON.stringify(app)).toBe('Ready');
    const res = await fetchApp(String(app.url));
    expect(res.status).toBe(200);
    expect(res.body).toContain(text);
    // Labelled with its app once it runs (it may have been claimed ahead of the deploy).
    await waitFor('its one claim labelled', async () => (await claimsOf(app.app_id)).length === 1);
    expect(await claimsOf(app.app_id)).toHaveLength(1);
  });

  it('redeploys, rolls back, suspends (no claim left) and wakes on a request', async () => {
    const v1 = await deployed('k8s-life', await appSource('version one'));
    expect(v1.phase).toBe('Ready');
    const v2 = await deployed('k8s-life', await appSource('version two'));
    expect(v2.phase).toBe('Ready');
    expect((await fetchApp(String(v2.url))).body).toBe('version two');

    const back = await call(server.baseURL, `/v1/apps/${v1.app_id}/rollback`, {
      method: 'POST',
      token: ALICE,
      json: { version: 1 },
    });
    expect([200, 202]).toContain(back.status);
    await waitFor(
      'rollback serves version one',
      async () => {
        const res = await fetchApp(String(v1.url));
        return res.status === 200 && res.body === 'version one';
      },
      60_000,
    );

    const suspend = await call(server.baseURL, `/v1/apps/${v1.app_id}/suspend`, {
      method: 'POST',
      token: ALICE,
    });
    expect(suspend.status).toBe(200);
    await waitForPhase(server.baseURL, ALICE, v1.app_id, ['Suspended'], 30_000);
    // Suspended: the claim is gone (its pod with it); kept warm sandboxes are not claims.
    await waitFor(
      'no claim while suspended',
      async () => (await claimsOf(v1.app_id)).length === 0,
      30_000,
    );
    // Not serving: its route is gone, so its host falls through to the control plane.
    await waitFor(
      'route withdrawn while suspended',
      async () => {
        const res = await cluster.api.get(
          `/apis/gateway.networking.k8s.io/v1/namespaces/${NS}/httproutes/slipway-app-k8s-life`,
        );
        return res.status === 404;
      },
      30_000,
    );
    // A request wakes it: held by the control plane's router until a new claim serves.
    const woke = await fetchApp(String(v1.url));
    expect(woke.status).toBe(200);
    expect(woke.body).toBe('version one');
    await waitForPhase(server.baseURL, ALICE, v1.app_id, ['Ready'], 30_000);
  });

  it('routes a Ready app ingress → pod: a Service, EndpointSlice and HTTPRoute that reach the pod without the control plane', async () => {
    type Route = {
      spec: { hostnames: string[]; rules: { backendRefs: { name: string; port: number }[] }[] };
    };
    type Slice = { items: { endpoints: { addresses: string[] }[]; ports: { port: number }[] }[] };
    type Svc = { spec: { ports: { port: number; targetPort: number }[] } };
    const app = (await waitForPhase(server.baseURL, ALICE, 'k8s-node', ['Ready'], 30_000)) as App;
    const host = new URL(String(app.url)).hostname;
    const route = await waitFor(
      "the app's HTTPRoute",
      async () => {
        const res = await cluster.api.get<Route>(
          `/apis/gateway.networking.k8s.io/v1/namespaces/${NS}/httproutes/slipway-app-k8s-node`,
        );
        return res.status === 200 ? res.body : undefined;
      },
      30_000,
    );
    expect(route.spec.hostnames).toEqual([host]);
    const backend = route.spec.rules[0]?.backendRefs[0];
    const svc = await cluster.api.must<Svc>(
      'GET',
      `/api/v1/namespaces/${NS}/services/${backend?.name}`,
    );
    expect(svc.spec.ports[0]?.port).toBe(backend?.port);
    const slices = await cluster.api.must<Slice>(
      'GET',
      `/apis/discovery.k8s.io/v1/namespaces/${NS}/endpointslices?labelSelector=${encodeURIComponent(`kubernetes.io/service-name=${backend?.name}`)}`,
    );
    const podIP = slices.items[0]?.endpoints[0]?.addresses[0];
    const port = slices.items[0]?.ports[0]?.port;
    expect(podIP).toMatch(/^198\.1[89]\.\d+\.\d+$/);
    // What an ingress does with the route: straight to the pod's address, with the app's host.
    const direct = await fetchApp(`http://${host}:${port}/`, { connectTo: String(podIP) });
    expect(direct.status).toBe(200);
    expect(direct.body).toContain('hello from node');
    // The wildcard fallback sends every other apps host to the control plane.
    const fallback = await cluster.api.must<{ items: Route[] }>(
      'GET',
      `/apis/gateway.networking.k8s.io/v1/namespaces/${NS}/httproutes`,
    );
    expect(
      fallback.items.some((r) =>
        r.spec.hostnames.includes(`*.${host.split('.').slice(1).join('.')}`),
      ),
    ).toBe(true);
  });

  it('lets an app out only through the egress gate, to the hosts it lists, behind a default-deny NetworkPolicy', async () => {
    type Policy = {
      spec: {
        policyTypes: string[];
        egress: {
          to: { podSelector: { matchLabels: Record<string, string> } }[];
          ports: { port: number }[];
        }[];
      };
    };
    const policy = await cluster.api.must<Policy>(
      'GET',
      `/apis/networking.k8s.io/v1/namespaces/${NS}/networkpolicies/slipway-sandboxes`,
    );
    expect(policy.spec.policyTypes).toEqual(['Ingress', 'Egress']);
    expect(policy.spec.egress).toHaveLength(1);
    expect(policy.spec.egress[0]?.ports).toEqual([expect.objectContaining({ port: gatePort })]);
    expect(policy.spec.egress[0]?.to[0]?.podSelector.matchLabels).toEqual({
      'app.kubernetes.io/name': 'slipway',
    });

    const target = createServer((_req, res) => res.end('the target says hi'));
    await new Promise<void>((r) => target.listen(0, '127.0.0.1', r));
    const allowed = `127.0.0.1:${(target.address() as AddressInfo).port}`;
    const dir = mkdtempSync(join(tmpdir(), 'k8s-egress-'));
    writeFileSync(join(dir, 'package.json'), '{"name":"egress","main":"server.js"}');
    writeFileSync(
      join(dir, 'server.js'),
      `const http = require('node:http');
const proxy = new URL(process.env.HTTP_PROXY);
const via = (url) => new Promise((done) => {
  const q = http.request({ host: proxy.hostname, port: proxy.port, path: url, headers: { host: new URL(url).host } }, (res) => {
    let body = ''; res.on('data', (d) => (body += d)); res.on('end', () => done({ status: res.statusCode, body }));
  });
  q.on('error', (e) => done({ status: 0, body: String(e) }));
  q.end();
});
http.createServer(async (req, res) => {
  const [ok, no] = await Promise.all([via('http://${allowed}/'), via('http://127.0.0.1:9/')]);
  res.end(JSON.stringify({ ok, no }));
}).listen(process.env.PORT);
`,
    );
    const res = await deploy(
      server.baseURL,
      ALICE,
      { name: 'k8s-egress', egress: { allowed_hosts: [allowed] } },
      await tarGzDir(dir),
    );
    expect([200, 202]).toContain(res.status);
    const app = (await waitForPhase(
      server.baseURL,
      ALICE,
      'k8s-egress',
      ['Ready', 'Failed'],
      60_000,
    )) as App;
    expect(app.phase, JSON.stringify(app)).toBe('Ready');
    const out = JSON.parse((await fetchApp(String(app.url))).body) as {
      ok: { status: number; body: string };
      no: { status: number; body: string };
    };
    target.close();
    expect(out.ok).toEqual({ status: 200, body: 'the target says hi' });
    expect(out.no.status).toBe(403);
    expect(out.no.body).toContain('refused');
  });

  it('is ready once the cluster has what it needs: API, CRDs, RBAC (SelfSubjectAccessReview)', async () => {
    const ready = await waitFor(
      'readyz 200',
      async () => {
        // An admin sees each component's details.
        const res = await call(server.baseURL, '/readyz', { token: ADMIN });
        return res.status === 200 ? res.body : undefined;
      },
      30_000,
    );
    expect(ready).toMatchObject({
      components: { runtime: { ok: true, backend: 'kubernetes', cluster: 'ok' } },
    });
  });

  it('counts visitors who reach the pod directly: not idle while they come, suspended once they stop', async () => {
    const res = await deploy(
      server.baseURL,
      ALICE,
      { name: 'k8s-idle', ttl: '3s' },
      await appSource('busy'),
    );
    expect([200, 202]).toContain(res.status);
    const app = (await waitForPhase(server.baseURL, ALICE, 'k8s-idle', ['Ready'], 60_000)) as App;
    const host = new URL(String(app.url)).hostname;
    type Slice = { items: { endpoints: { addresses: string[] }[]; ports: { port: number }[] }[] };
    const slice = await waitFor(
      "the app's EndpointSlice",
      async () => {
        const found = await cluster.api.must<Slice>(
          'GET',
          `/apis/discovery.k8s.io/v1/namespaces/${NS}/endpointslices?labelSelector=${encodeURIComponent('kubernetes.io/service-name=slipway-app-k8s-idle')}`,
        );
        return found.items[0];
      },
      30_000,
    );
    const podIP = String(slice.endpoints[0]?.addresses[0]);
    const port = slice.ports[0]?.port;
    // Twice the ttl of visits that never touch the control plane.
    for (let i = 0; i < 12; i += 1) {
      const visit = await fetchApp(`http://${host}:${port}/`, { connectTo: podIP });
      expect(visit.body).toBe('busy');
      await new Promise((r) => setTimeout(r, 500));
    }
    const still = await call(server.baseURL, '/v1/apps/k8s-idle', { token: ALICE });
    expect((still.body as App).phase).toBe('Ready');
    await waitForPhase(server.baseURL, ALICE, 'k8s-idle', ['Suspended'], 20_000);
  });

  it('gives a private app no direct route: its visitors pass the router, which checks grants', async () => {
    const routeOf = (name: string) =>
      cluster.api.get(
        `/apis/gateway.networking.k8s.io/v1/namespaces/${NS}/httproutes/slipway-app-${name}`,
      );
    const app = await deployed('k8s-secret', await appSource('for members'));
    await waitFor(
      'public app routed',
      async () => (await routeOf('k8s-secret')).status === 200,
      30_000,
    );
    const patch = await call(server.baseURL, '/v1/apps/k8s-secret', {
      method: 'PATCH',
      token: ALICE,
      json: { access: 'private' },
    });
    expect(patch.status).toBe(200);
    // Gone before the answer: no moment when the app is private but reachable around the router.
    expect((await routeOf('k8s-secret')).status).toBe(404);
    expect((await fetchApp(String(app.url))).status).toBe(401);
    const owner = await fetchApp(String(app.url), {
      headers: { authorization: `Bearer ${ALICE}` },
    });
    expect(owner.body).toBe('for members');
    // A redeploy keeps it private and unrouted.
    await deployed('k8s-secret', await appSource('for members, v2'));
    expect((await routeOf('k8s-secret')).status).toBe(404);
    const open = await call(server.baseURL, '/v1/apps/k8s-secret', {
      method: 'PATCH',
      token: ALICE,
      json: { access: 'public' },
    });
    expect(open.status).toBe(200);
    await waitFor(
      'public again: routed',
      async () => (await routeOf('k8s-secret')).status === 200,
      30_000,
    );
  });

  it('keeps apps to their owner', async () => {
    const mine = await call(server.baseURL, '/v1/apps/k8s-node', { token: BOB });
    expect(mine.status).toBe(404);
    const list = await call(server.baseURL, '/v1/apps', { token: BOB });
    expect((list.body as { items: unknown[] }).items).toHaveLength(0);
  });

  it('deletes an app: its claim, sandbox, pod and direct route are gone', async () => {
    const app = await deployed('k8s-gone', await appSource('short-lived'));
    const route = `/apis/gateway.networking.k8s.io/v1/namespaces/${NS}/httproutes/slipway-app-k8s-gone`;
    const service = `/api/v1/namespaces/${NS}/services/slipway-app-k8s-gone`;
    await waitFor(
      'routed while Ready',
      async () => (await cluster.api.get(route)).status === 200,
      30_000,
    );
    type Bound = { status?: { sandbox?: { name?: string; podIPs?: string[] } } };
    const [claim] = await waitFor('its claim labelled', async () => {
      const found = await claimsOf(app.app_id);
      return found.length > 0 ? found : undefined;
    });
    expect(claim).toBeDefined();
    const bound = await cluster.api.must<Bound>(
      'GET',
      `${EXT}/namespaces/${NS}/sandboxclaims/${claim?.metadata.name}`,
    );
    const sandboxName = String(bound.status?.sandbox?.name);
    const podIP = String(bound.status?.sandbox?.podIPs?.[0]);
    const del = await call(server.baseURL, `/v1/apps/${app.app_id}`, {
      method: 'DELETE',
      token: ALICE,
    });
    expect(del.status).toBe(204);
    await waitFor(
      'claim, sandbox and pod gone',
      async () => {
        const sandbox = await cluster.api.get(
          `/apis/agents.x-k8s.io/v1beta1/namespaces/${NS}/sandboxes/${sandboxName}`,
        );
        const running = [...node.running().values()].some((p) => p.ip === podIP);
        return (await claimsOf(app.app_id)).length === 0 && sandbox.status === 404 && !running;
      },
      30_000,
    );
    await waitFor(
      'route and Service gone',
      async () =>
        (await cluster.api.get(route)).status === 404 &&
        (await cluster.api.get(service)).status === 404,
      30_000,
    );
    expect((await fetchApp(String(app.url))).status).toBe(404);
  });

  it('fails an app whose claims never bind with ClaimFailed, after retries, leaving no claim', async () => {
    // A second Slipway in a namespace whose pods no node runs: no claim there ever binds.
    const lonely = 'slipway-unbound';
    await cluster.api.must('POST', '/api/v1/namespaces', { metadata: { name: lonely } });
    const other = await startTestServer({
      ...config,
      kubernetes: { namespace: lonely, kubeconfig: cluster.kubeconfig },
      runtime: {
        ...(config.runtime as object),
        kubernetes: {
          claimTimeout: '1s',
          egress: { listen: `127.0.0.1:${await freePort()}`, address: '127.0.0.1' },
        },
      },
    });
    try {
      const res = await deploy(
        other.baseURL,
        ALICE,
        { name: 'k8s-unbound' },
        await tarGzDir(join('examples', 'static')),
      );
      expect([200, 202]).toContain(res.status);
      const app = (await waitForPhase(
        other.baseURL,
        ALICE,
        'k8s-unbound',
        ['Ready', 'Failed'],
        90_000,
      )) as App;
      expect(app.phase).toBe('Failed');
      expect(app.reason).toBe('ClaimFailed');
      expect(app.message).toMatch(/after 5 retries: no warm static sandbox/);
      // No app's claim is left (the claims made ahead of deploys, with no app, retry meanwhile).
      const left = await cluster.api.must<{ items: unknown[] }>(
        'GET',
        `${EXT}/namespaces/${lonely}/sandboxclaims?labelSelector=slipway.dev%2Fapp-id`,
      );
      expect(left.items).toHaveLength(0);
    } finally {
      await other.stop();
    }
  }, 120_000);

  it('restarts the control plane with apps Ready: they come back and serve', async () => {
    await server.close();
    server = await startTestServer(config, dataDir);
    // The restart's template is the same (one gate port): the warm pools are the same objects.
    const after = await cluster.api.must<{ items: unknown[] }>(
      'GET',
      `${EXT}/namespaces/${NS}/sandboxwarmpools?labelSelector=${encodeURIComponent('slipway.dev/template=node')}`,
    );
    expect(after.items).toHaveLength(1);
    for (const [name, text] of [
      ['k8s-node', 'hello from node'],
      ['k8s-python', 'hello from python'],
    ] as const) {
      const app = (await waitForPhase(
        server.baseURL,
        ALICE,
        name,
        ['Ready', 'Failed'],
        60_000,
      )) as App;
      expect(app.phase).toBe('Ready');
      const res = await fetchApp(String(app.url));
      expect(res.body).toContain(text);
    }
  }, 120_000);
});
