// The kubernetes runtime on the real test cluster: SandboxTemplates and warm pools it writes are
// filled by the real agent-sandbox controller; claims bind; the pod agent (the bundle the image
// runs) enrolls, pulls the source by URL, starts the app; reap deletes the claim and the pod goes.
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KubeAccessCheck } from '../../src/cluster/access-check.js';
import { clusterIdentity } from '../../src/cluster/cluster-identity.js';
import {
  createKubernetesRuntime,
  type KubernetesRuntimeOptions,
} from '../../src/runtime/kubernetes/kubernetes-runtime.js';
import {
  AppExitError,
  RuntimeError,
  type InjectSpec,
  type Runtime,
  type Sandbox,
} from '../../src/runtime/runtime.js';
import { startCluster, startTestNode, waitFor, type Cluster, type TestNode } from './cluster.js';
import { kubeConfigFor, startRelay, type Relay } from './configmap-support.js';
import { bundlePodAgent, podAgentCommand } from './pod-agent.js';
import { tarGzDir } from '../support/tarball.js';

const NS = 'slipway';
const EXT = '/apis/extensions.agents.x-k8s.io/v1beta1';

const tarball = tarGzDir;

/** Version 1 of `appId` on the fast lane from `<template>.v1`, no env and no egress. */
function spec(appId: string, template: string, more: Partial<InjectSpec> = {}): InjectSpec {
  return {
    appId,
    version: 1,
    sourceKey: `${template}.v1`,
    template,
    lane: 'fast',
    env: [],
    allowedHosts: [],
    ...more,
  };
}

function get(sandbox: Sandbox, path = '/'): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ path, createConnection: () => sandbox.connect() as never }, (res) => {
      let body = '';
      res.on('data', (d: Buffer) => (body += d.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('kubernetes runtime (real API server, agent-sandbox controller, test node)', () => {
  let cluster: Cluster;
  let node: TestNode;
  let runtime: Runtime;
  let options: KubernetesRuntimeOptions;
  let relay: Relay;
  let sources: Server;
  const blobs = new Map<string, Buffer>();
  /** Sources the runtime sends inside the inject (none is served for a pull). */
  const inline = new Map<string, Buffer>();
  const logs: string[] = [];

  beforeAll(async () => {
    cluster = await startCluster();
    const bundle = await bundlePodAgent();
    node = await startTestNode({
      cluster,
      namespace: NS,
      labelSelector: 'slipway.dev/template!=python',
      agentCommand: podAgentCommand(bundle),
    });
    await cluster.api.must('POST', '/api/v1/namespaces', { metadata: { name: NS } });
    sources = createServer((req, res) => {
      const blob = blobs.get(decodeURIComponent((req.url ?? '').slice(1)));
      res.statusCode = blob ? 200 : 404;
      res.end(blob);
    });
    await new Promise<void>((r) => sources.listen(0, '127.0.0.1', r));
    const port = (sources.address() as AddressInfo).port;
    blobs.set('static.v1', await tarball('examples/static'));
    blobs.set('node.v1', await tarball('examples/node'));
    // Through a relay the tests can cut: the runtime's watches must come back after it.
    relay = await startRelay(cluster);
    const kc = kubeConfigFor(cluster, { server: relay.server });
    const kept = new Map<string, string>();
    const meta = {
      getMeta: (k: string) => kept.get(k),
      setMeta: (k: string, v: string) => void kept.set(k, v),
    };
    options = {
      kubeConfig: kc,
      sandboxObjects: { managedBy: 'slipway' },
      access: new KubeAccessCheck(kc, NS, {
        routeKind: 'none',
        configMapStore: false,
        networkPolicy: true,
      }),
      namespace: NS,
      identity: clusterIdentity('runtime-suite', meta),
      keepRunning: false,
      orphanGraceMs: 60_000,
      templates: ['static', 'node', 'python'],
      poolSize: 1,
      claimAhead: 0,
      claimTimeoutMs: 10_000,
      startTimeoutMs: 15_000,
      pod: {
        image: 'slipway/agent:test',
        command: ['node', '/opt/slipway/agent.mjs'],
        memoryLimitMB: 256,
        cpu: 1,
      },
      egress: {
        listen: { host: '127.0.0.1', port: 0 },
        address: '127.0.0.1',
        service: 'unused',
        allowPrivate: [],
      },
      sourceUrl: (key) => Promise.resolve(`http://127.0.0.1:${port}/${encodeURIComponent(key)}`),
      inlineSource: (key) => Promise.resolve(inline.get(key)),
      versions: { node: process.versions.node },
      log: (_level, msg, extra) => logs.push(`${msg} ${JSON.stringify(extra ?? {})}`),
    };
    runtime = createKubernetesRuntime(options);
    await runtime.start();
  });

  afterAll(async () => {
    await runtime?.stop();
    await node?.stop();
    await cluster?.stop();
    await relay?.cut();
    sources?.close();
  });

  it('writes a SandboxTemplate and a warm pool per template, which the controller fills', async () => {
    const tpl = await cluster.api.must(
      'GET',
      `${EXT}/namespaces/${NS}/sandboxtemplates/slipway-node`,
    );
    const container = (tpl.spec?.podTemplate as { spec: { containers: { env: object[] }[] } }).spec
      .containers[0];
    // The enroll key is a reference to a Secret, never a value in the spec.
    expect(JSON.stringify(container?.env)).toContain('secretKeyRef');
    expect(JSON.stringify(tpl)).not.toMatch(/SLIPWAY_ENROLL_KEY","value"/);
    await waitFor(
      'pools ready',
      async () => {
        const s = runtime.status();
        return s.pools.static?.idle === 1 && s.pools.node?.idle === 1;
      },
      60_000,
    );
  });

  it('claims, injects a static site and a node app, serves them, and reaps the claim', async () => {
    const site = await runtime.claim('static', 'app-static');
    await runtime.inject(site, spec('app-static', 'static'));
    const page = await get(site);
    expect(page.status).toBe(200);
    expect(page.body).toContain('<html');
    expect(await runtime.health(site)).toBe(true);

    const app = await runtime.claim('node', 'app-node');
    const lines: string[] = [];
    app.onLog((l) => lines.push(l.text));
    let activity = 0;
    app.onActivity?.(() => (activity += 1));
    await runtime.inject(
      app,
      spec('app-node', 'node', { env: [{ name: 'GREETING', value: 'hi' }] }),
    );
    const res = await get(app);
    expect(res.status).toBe(200);
    await waitFor('activity reported by the pod agent', async () => activity > 0, 5_000);

    const claimName = app.id;
    const pods = new Set(node.running().keys());
    await runtime.reap(app);
    await waitFor(
      'claim gone and its pod stopped',
      async () => {
        const claim = await cluster.api.get(`${EXT}/namespaces/${NS}/sandboxclaims/${claimName}`);
        const running = node.running();
        return claim.status === 404 && [...pods].some((p) => !running.has(p));
      },
      30_000,
    );
    await expect(get(app)).rejects.toThrow();
    await runtime.reap(site);
  });

  it('sends a small source inside the inject request: the pod pulls nothing', async () => {
    // Not among the served blobs: a pull of it would answer 404 and the inject would fail.
    inline.set('inline.v1', await tarball('examples/node'));
    const app = await runtime.claim('node', 'app-inline');
    await runtime.inject(app, spec('app-inline', 'node', { sourceKey: 'inline.v1' }));
    expect((await get(app)).status).toBe(200);
    await runtime.reap(app);
  });

  it("keeps a pod's agent to the control plane: one enroll, the enroll key is no token, nothing without the sandbox's own", async () => {
    const sb = await runtime.claim('static', 'app-locked');
    const ip = String(sb.address?.host);
    const secret = await cluster.api.must<{ data: Record<string, string> }>(
      'GET',
      `/api/v1/namespaces/${NS}/secrets/slipway-sandbox-enroll`,
    );
    const enrollKey = Buffer.from(String(secret.data.static), 'base64').toString('utf8');
    const agent = (path: string, token: string, body?: unknown) =>
      fetch(`http://${ip}:9090${path}`, {
        method: body === undefined ? 'GET' : 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      }).then((r) => r.status);
    // Enrolled already by the claim: a second enroll, even with the key, is refused.
    expect(await agent('/enroll', enrollKey, { token: 'x'.repeat(40) })).toBe(409);
    expect(await agent('/enroll', 'not-the-key', { token: 'x'.repeat(40) })).toBe(401);
    // The enroll key opens nothing else.
    expect(await agent('/status', enrollKey)).toBe(401);
    expect(await agent('/events', enrollKey)).toBe(401);
    expect(
      await agent('/inject', enrollKey, { sourceKey: 'static.v1', env: [], startTimeoutMs: 1000 }),
    ).toBe(401);
    // The runtime's own token still works: the sandbox was not taken over.
    expect(await runtime.health(sb)).toBe(false);
    await runtime.inject(sb, spec('app-locked', 'static'));
    expect(await runtime.health(sb)).toBe(true);
    await runtime.reap(sb);
  });

  it('reports an app that exits at once with its exit code and last lines', async () => {
    blobs.set(
      'crash.v1',
      await (async () => {
        const { mkdtempSync, writeFileSync } = await import('node:fs');
        const dir = mkdtempSync('/tmp/crash-');
        writeFileSync(`${dir}/package.json`, '{"name":"crash","main":"index.js"}');
        writeFileSync(`${dir}/index.js`, 'console.error("boom: no database"); process.exit(3);');
        return tarball(dir);
      })(),
    );
    const sb = await runtime.claim('node', 'app-crash');
    const err = await runtime
      .inject(sb, spec('app-crash', 'node', { sourceKey: 'crash.v1' }))
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AppExitError);
    expect((err as AppExitError).exit.code).toBe(3);
    expect((err as AppExitError).exit.lastLines.join('\n')).toContain('boom: no database');
  });

  it('holds a claim ahead per template: a deploy takes it at once, a new one replaces it, a held pod that goes is replaced', async () => {
    type Claim = {
      metadata: { name: string; labels: Record<string, string> };
      status?: { sandbox?: { name?: string } };
    };
    const held = async () =>
      (
        await cluster.api.must<{ items: Claim[] }>(
          'GET',
          `${EXT}/namespaces/${NS}/sandboxclaims?labelSelector=${encodeURIComponent('slipway.dev/template=node,!slipway.dev/app-id')}`,
        )
      ).items;
    const heldBound = (not: string[] = []) =>
      waitFor(
        'a node claim held ahead, bound',
        async () => {
          const found = (await held()).filter((c) => !not.includes(c.metadata.name));
          return found.length === 1 && found[0]?.status?.sandbox?.name ? found[0] : undefined;
        },
        30_000,
      );
    await runtime.stop();
    runtime = createKubernetesRuntime({ ...options, claimAhead: 1 });
    await runtime.start();
    const first = await heldBound();
    const holding = () => (runtime.status().claimsAhead as Record<string, number>).node === 1;
    await waitFor('the reserve holds its pod', async () => holding(), 30_000);

    const app = await runtime.claim('node', 'app-ahead');
    expect(app.id).toBe(first.metadata.name);
    await runtime.inject(app, spec('app-ahead', 'node'));
    expect((await get(app)).status).toBe(200);
    await waitFor(
      'the claim labelled with its app once it runs',
      async () =>
        (await cluster.api.must<Claim>('GET', `${EXT}/namespaces/${NS}/sandboxclaims/${app.id}`))
          .metadata.labels['slipway.dev/app-id'] === 'app-ahead',
      10_000,
    );
    const second = await heldBound([first.metadata.name]);
    await waitFor('the reserve holds the new pod', async () => holding(), 30_000);

    // Its pod goes away while held: the claim is let go and another made.
    const pod = String(second.status?.sandbox?.name);
    await cluster.api.must('DELETE', `/api/v1/namespaces/${NS}/pods/${pod}`);
    const third = await heldBound([first.metadata.name, second.metadata.name]);
    await waitFor(
      'the claim that lost its pod deleted',
      async () =>
        (await cluster.api.get(`${EXT}/namespaces/${NS}/sandboxclaims/${second.metadata.name}`))
          .status === 404,
      30_000,
    );

    await runtime.reap(app);
    // A stop lets the held claims go.
    await runtime.stop();
    expect(
      (await cluster.api.get(`${EXT}/namespaces/${NS}/sandboxclaims/${third.metadata.name}`))
        .status,
    ).toBe(404);
    runtime = createKubernetesRuntime(options);
    await runtime.start();
  });

  it('replaces a warm pool whose template changed, so no pod runs an old spec', async () => {
    type List = { items: { metadata: { name: string } }[] };
    const poolsOf = async () =>
      (
        await cluster.api.must<List>(
          'GET',
          `${EXT}/namespaces/${NS}/sandboxwarmpools?labelSelector=${encodeURIComponent('slipway.dev/template=static')}`,
        )
      ).items.map((p) => p.metadata.name);
    const before = await poolsOf();
    expect(before).toHaveLength(1);
    const changed = createKubernetesRuntime({
      ...options,
      pod: { ...options.pod, image: 'slipway/agent:next' },
    });
    await runtime.stop();
    await changed.start();
    runtime = changed;
    const after = await poolsOf();
    expect(after).toHaveLength(1);
    expect(after[0]).not.toBe(before[0]);
    const site = await runtime.claim('static', 'app-after-change');
    expect(site.id).toMatch(/^slipway-static-/);
    await runtime.reap(site);
  });

  it('picks its watches up again after the API server connection drops', async () => {
    await relay.cut();
    // Long enough for the watches to notice and their first resync to fail.
    await new Promise((r) => setTimeout(r, 2_500));
    expect(runtime.status().ok).toBe(false);
    await relay.open();
    await waitFor('watches healthy again', async () => runtime.status().ok, 30_000);
    // A claim binds: the claim watch sees the controller's update (no polling).
    const sb = await runtime.claim('static', 'app-after-drop');
    expect(sb.address?.host).toMatch(/^198\.1[89]\./);
    await runtime.reap(sb);
  });

  it('a claim that does not bind in time fails as a transient error and leaves no claim', async () => {
    // The test node runs no python pods: the python pool never has a Ready sandbox.
    const err = await runtime.claim('python', 'app-never').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RuntimeError);
    expect((err as RuntimeError).transient).toBe(true);
    expect((err as RuntimeError).message).toMatch(/no warm python sandbox/);
    const claims = await cluster.api.must<{ items: unknown[] }>(
      'GET',
      `${EXT}/namespaces/${NS}/sandboxclaims?labelSelector=slipway.dev/app-id%3Dapp-never`,
    );
    expect(claims.items).toHaveLength(0);
  });
});
