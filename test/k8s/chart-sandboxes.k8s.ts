// Slipway on the sandbox objects the Helm chart renders: the chart's SandboxTemplates, warm pools
// and enroll Secret applied to the real test cluster, the chart's own config (its ConfigMap) run
// by a real server, apps deployed and served. The pods find the egress gate through the egress
// Service's link env vars, as in a cluster: here the Service gets a ClusterIP this test puts on
// lo (nothing routes ClusterIPs in the test cluster), where the gate listens.
import { execFileSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deploy, fetchApp, waitForPhase } from '../support/deploy.js';
import { MOTO_SETUP_TIMEOUT_MS } from '../support/moto.js';
import { call, startTestServer, type RawConfig, type TestServer } from '../support/server.js';
import { tarGzDir } from '../support/tarball.js';
import { applyChartSandboxes, render } from './chart-tools.js';
import { waitFor, type K8sObject } from './cluster.js';
import { startSlipwayEnv, type SlipwayEnv } from './slipway-env.js';

const NS = 'slipway';
const EXT = '/apis/extensions.agents.x-k8s.io/v1beta1';
const ALICE = 'alice-chart-sandboxes-key-0123456789';
const ADMIN = 'ops-chart-sandboxes-key-0123456789';
const BUCKET = 'chart-sandboxes';
/** In the test cluster's service range (10.96.0.0/16); the test adds it to lo. */
const GATE_IP = `10.96.${200 + Math.floor(Math.random() * 50)}.${2 + Math.floor(Math.random() * 250)}`;

describe("Slipway on the chart's sandbox objects (real API server, agent-sandbox, test node)", () => {
  let env: SlipwayEnv;
  let server: TestServer;
  let objects: K8sObject[];

  beforeAll(async () => {
    env = await startSlipwayEnv(NS, BUCKET);
    const { cluster } = env;
    // Two of the three templates: the release decides which ones Slipway serves.
    ({ objects } = await render(mkdtempSync(join(tmpdir(), 'helm-')), [
      '--set',
      'sandboxes.poolSize=1',
      '--set',
      'sandboxes.templates={static,node}',
    ]));
    // The chart's own config, with what only a cluster would have given it replaced.
    const chartConfig = (await applyChartSandboxes(cluster, NS, objects, GATE_IP)) as RawConfig & {
      server: object;
      runtime: { kubernetes: { egress: object } };
    };
    const config: RawConfig = {
      ...chartConfig,
      server: {},
      auth: {
        apiKeys: [
          { key: ALICE, name: 'alice' },
          { key: ADMIN, name: 'ops', role: 'admin' },
        ],
      },
      ...env.config(),
      runtime: {
        ...chartConfig.runtime,
        egress: { allowPrivate: ['127.0.0.1'] },
        kubernetes: {
          ...chartConfig.runtime.kubernetes,
          egress: { ...chartConfig.runtime.kubernetes.egress, listen: `${GATE_IP}:3128` },
          routes: { kind: 'none' },
        },
      },
    };
    server = await startTestServer(config);
  }, MOTO_SETUP_TIMEOUT_MS);

  afterAll(async () => {
    await server?.stop();
    await env?.stop();
    execFileSync('ip', ['addr', 'del', `${GATE_IP}/32`, 'dev', 'lo']);
  });

  it.each([
    ['static', 'Hello from a static Slipway app'],
    ['node', 'hello from node'],
  ])("deploys the %s example into a pod of the chart's pool", async (example, text) => {
    const name = `chart-${example}`;
    const res = await deploy(
      server.baseURL,
      ALICE,
      { name },
      await tarGzDir(join('examples', example)),
    );
    expect([200, 202]).toContain(res.status);
    const app = await waitForPhase(server.baseURL, ALICE, name, ['Ready', 'Failed'], 60_000);
    expect(app.phase, JSON.stringify(app)).toBe('Ready');
    expect((await fetchApp(String(app.url))).body).toContain(text);
    // Labelled with its app once it runs (it may have been claimed ahead of the deploy).
    const claims = await waitFor('the app claim labelled', async () => {
      const found = await env.cluster.api.must<{
        items: { spec: { warmPoolRef: { name: string } } }[];
      }>(
        'GET',
        `${EXT}/namespaces/${NS}/sandboxclaims?labelSelector=${encodeURIComponent(`slipway.dev/app-id=${name}`)}`,
      );
      return found.items.length > 0 ? found : undefined;
    });
    const pool = objects.find(
      (o) =>
        o.kind === 'SandboxWarmPool' && o.metadata?.labels?.['slipway.dev/template'] === example,
    );
    expect(pool?.metadata?.name).toBeDefined();
    expect(claims.items.map((c) => c.spec.warmPoolRef.name)).toEqual([pool?.metadata?.name]);
  });

  it("serves the chart's templates only, and sees its pools fill", async () => {
    type Templates = { templates: { name: string; available: boolean }[] };
    const templates = (await call(server.baseURL, '/v1/templates', { token: ALICE }))
      .body as Templates;
    const available = templates.templates.filter((t) => t.available).map((t) => t.name);
    expect(available.sort()).toEqual(['node', 'static']);
    type Ready = { components: { runtime: { pools: Record<string, { idle: number }> } } };
    const pools = await waitFor(
      'readyz with the pools full',
      async () => {
        const res = await call(server.baseURL, '/readyz', { token: ADMIN });
        const found = (res.body as Ready | undefined)?.components?.runtime?.pools;
        return res.status === 200 && found?.static?.idle === 1 && found.node?.idle === 1
          ? found
          : undefined;
      },
      30_000,
    );
    expect(Object.keys(pools).sort()).toEqual(['node', 'static']);
    const res = await deploy(
      server.baseURL,
      ALICE,
      { name: 'chart-python', runtime: { template: 'python' } },
      await tarGzDir(join('examples', 'python')),
    );
    // Failed at once, with the diagnosis (spec: a deploy that fails is 500 deploy_failed).
    expect(res.status).toBe(500);
    expect(res.body).toMatchObject({
      code: 'deploy_failed',
      details: { reason: 'UnknownTemplate' },
    });
    expect(String((res.body as { message?: string }).message)).toContain('available: node, static');
  });

  it('writes no sandbox object of its own: the chart keeps them', async () => {
    type List = { items: K8sObject[] };
    const templates = await env.cluster.api.must<List>(
      'GET',
      `${EXT}/namespaces/${NS}/sandboxtemplates`,
    );
    const pools = await env.cluster.api.must<List>(
      'GET',
      `${EXT}/namespaces/${NS}/sandboxwarmpools`,
    );
    for (const obj of [...templates.items, ...pools.items]) {
      expect(obj.metadata?.labels?.['app.kubernetes.io/managed-by']).toBe('Helm');
    }
    expect(pools.items).toHaveLength(objects.filter((o) => o.kind === 'SandboxWarmPool').length);
  });
});
