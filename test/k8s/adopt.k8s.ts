// Issue 27 item 1: a Slipway process on the test cluster stopped (SIGTERM) or killed (-9) and
// started again never touches a serving app: its claim, pod and route stay, and the next process
// adopts them. Claims of another installation are left alone; one of ours that no app runs goes
// after the grace period.
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deploy, fetchApp, waitForPhase } from '../support/deploy.js';
import { MOTO_CREDENTIALS, MOTO_SETUP_TIMEOUT_MS } from '../support/moto.js';
import { startServerProcess, type ServerProcess } from '../support/server-process.js';
import { tarGzDir } from '../support/tarball.js';
import { freePort, waitFor, type Cluster } from './cluster.js';
import { appSlice, routeLoop } from './route-loop.js';
import { startSlipwayEnv, type SlipwayEnv } from './slipway-env.js';

const NS = 'slipway-adopt';
const CLAIMS = `/apis/extensions.agents.x-k8s.io/v1beta1/namespaces/${NS}/sandboxclaims`;
const KEY = 'adopt-k8s-key-0123456789abcdef0123';
const GRACE_MS = 5_000;
const CLIENTS = 10;

type Claim = {
  metadata: { name: string; uid: string; labels: Record<string, string> };
  status?: { sandbox?: { podIPs?: string[] } };
};

describe('Kubernetes: a restart of Slipway adopts its claims and routes, never destroys them', () => {
  let env: SlipwayEnv;
  let cluster: Cluster;
  let dataDir: string;
  let port: number;
  let config: Record<string, unknown>;
  let proc: ServerProcess | undefined;

  beforeAll(async () => {
    env = await startSlipwayEnv(NS, 'slipway-adopt-sources');
    cluster = env.cluster;
    const root = mkdtempSync(join(tmpdir(), 'slipway-k8s-adopt-'));
    dataDir = join(root, 'data');
    mkdirSync(dataDir);
    port = await freePort();
    config = {
      auth: { apiKeys: [{ key: KEY, name: 'alice' }] },
      ...env.config(),
      server: { restartContinuity: true },
      runtime: {
        backend: 'kubernetes',
        egress: { allowPrivate: ['127.0.0.1'] },
        poolSize: 1,
        startTimeout: '15s',
        kubernetes: {
          claimTimeout: '20s',
          orphanGrace: `${GRACE_MS / 1000}s`,
          versions: { node: process.versions.node },
          // One gate port across restarts: the pods keep the address they were made with.
          egress: { listen: `127.0.0.1:${await freePort()}`, address: '127.0.0.1' },
        },
      },
    };
  }, MOTO_SETUP_TIMEOUT_MS);

  afterAll(async () => {
    await proc?.stop('SIGKILL');
    await env?.stop();
  });

  const start = () =>
    startServerProcess({
      dataDir,
      port,
      config,
      env: { ...MOTO_CREDENTIALS },
      readyTimeoutMs: 90_000,
    });
  const claimsOf = async (selector: string) =>
    (
      await cluster.api.must<{ items: Claim[] }>(
        'GET',
        `${CLAIMS}?labelSelector=${encodeURIComponent(selector)}`,
      )
    ).items;
  const sliceOf = (name: string) => appSlice(cluster, NS, name);

  const adoptedOne = (p: ServerProcess) =>
    p
      .output()
      .some((l) => l.includes('claims left by the last process') && l.includes('"adopted":1'));

  it('keeps serving through the pod route across SIGTERM + start and kill -9 + start, on the same claim and pod', async () => {
    proc = await start();
    const dir = mkdtempSync(join(tmpdir(), 'k8s-keep-'));
    writeFileSync(join(dir, 'package.json'), '{"name":"keep","main":"server.js"}');
    writeFileSync(
      join(dir, 'server.js'),
      "require('node:http').createServer((q, s) => s.end('kept')).listen(process.env.PORT);\n",
    );
    const res = await deploy(proc.baseURL, KEY, { name: 'k8s-keep' }, await tarGzDir(dir));
    expect([200, 202], JSON.stringify(res.body)).toContain(res.status);
    const app = (await waitForPhase(
      proc.baseURL,
      KEY,
      'k8s-keep',
      ['Ready', 'Failed'],
      60_000,
    )) as {
      phase: string;
      app_id: string;
      url: string;
    };
    expect(app.phase).toBe('Ready');
    const [before] = await waitFor('the claim notes what it runs', async () => {
      const found = await claimsOf(`slipway.dev/app-id=${app.app_id}`);
      return found.length === 1 && found[0]?.metadata.labels['slipway.dev/instance']
        ? found
        : undefined;
    });
    const instance = String(before?.metadata.labels['slipway.dev/instance']);
    const podIP = before?.status?.sandbox?.podIPs?.[0];
    await waitFor('the route names the pod', async () => {
      return (await sliceOf('k8s-keep'))?.endpoints[0]?.addresses[0] === podIP;
    });

    const loop = routeLoop(cluster, NS, {
      name: 'k8s-keep',
      host: new URL(app.url).hostname,
      text: 'kept',
      clients: CLIENTS,
    });
    const served = (n: number) =>
      waitFor(`${n} more answers`, async () => loop.count() >= n, 60_000);

    const sigterm = await proc.stop('SIGTERM');
    expect(sigterm).toBe(0);
    // While no control plane runs: another installation's claim and an orphan of ours appear.
    const claim = (name: string, labels: Record<string, string>) =>
      cluster.api.must('POST', CLAIMS, {
        apiVersion: 'extensions.agents.x-k8s.io/v1beta1',
        kind: 'SandboxClaim',
        metadata: {
          name,
          labels: { 'app.kubernetes.io/managed-by': 'slipway', ...labels },
        },
        spec: { warmPoolRef: { name: 'no-such-pool' } },
      });
    await claim('other-install-claim', {
      'slipway.dev/instance': 'another-install',
      'slipway.dev/app-id': 'nobody',
    });
    await claim('orphan-claim', {
      'slipway.dev/instance': instance,
      'slipway.dev/app-id': 'ghost',
    });
    await served(loop.count() + 50);
    const restarted = Date.now();
    proc = await start();
    const after = await waitForPhase(proc.baseURL, KEY, 'k8s-keep', ['Ready'], 30_000);
    expect(after).toMatchObject({ phase: 'Ready' });
    expect(adoptedOne(proc)).toBe(true);

    // The orphan goes, and only once the grace period is over; the other installation's stays.
    await waitFor(
      'the orphan claim deleted',
      async () => (await cluster.api.get(`${CLAIMS}/orphan-claim`)).status === 404,
      60_000,
    );
    expect(Date.now() - restarted).toBeGreaterThanOrEqual(GRACE_MS);

    await served(loop.count() + 50);
    const killed = await proc.stop('SIGKILL');
    expect(killed).toBe('SIGKILL');
    await served(loop.count() + 50);
    proc = await start();
    await waitForPhase(proc.baseURL, KEY, 'k8s-keep', ['Ready'], 30_000);
    expect(adoptedOne(proc)).toBe(true);
    await served(loop.count() + 50);

    const { answers, failed } = await loop.stop();
    expect(answers.length).toBeGreaterThan(200);
    expect(failed).toEqual([]);
    const [now] = await claimsOf(`slipway.dev/app-id=${app.app_id}`);
    expect(now?.metadata.uid).toBe(before?.metadata.uid);
    expect(now?.status?.sandbox?.podIPs?.[0]).toBe(podIP);
    expect((await sliceOf('k8s-keep'))?.endpoints[0]?.addresses[0]).toBe(podIP);
    expect((await cluster.api.get(`${CLAIMS}/other-install-claim`)).status).toBe(200);
    // Through the control plane too: the adopted sandbox is the app's, not a stand-in.
    expect((await fetchApp(app.url)).body).toBe('kept');
  }, 300_000);
});
