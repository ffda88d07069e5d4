import type { V1ConfigMap } from '@kubernetes/client-node';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deploy, fetchApp, waitForPhase } from '../support/deploy.js';
import { freePort, startServerProcess, type ServerProcess } from '../support/server-process.js';
import { tarGzDir } from '../support/tarball.js';
import { startCluster, type Cluster } from './cluster.js';
import { freshNamespace } from './configmap-support.js';

/**
 * The real control plane (its own process, `npm start`'s entry point) with `store.backend:
 * configmap` on the test cluster and the local runtime: a deploy acknowledged through the API is
 * in the API server when the answer comes, and a restart (kill -9, nothing flushed on the way out)
 * brings the app back listed and serving. Share links answer 503 as the spec says.
 */
const KEY = `cm-admin-${randomBytes(16).toString('hex')}`;
const root = mkdtempSync(join(tmpdir(), 'slipway-cm-server-'));
const dataDir = join(root, 'data');
let cluster: Cluster;
let namespace: string;
let port: number;
const running: ServerProcess[] = [];

beforeAll(async () => {
  mkdirSync(dataDir);
  cluster = await startCluster();
  namespace = await freshNamespace(cluster, 'slipway');
  port = await freePort();
});
afterAll(async () => {
  for (const server of running) await server.stop('SIGKILL');
  await cluster?.stop();
  rmSync(root, { recursive: true, force: true });
});

async function start(): Promise<ServerProcess> {
  const server = await startServerProcess({
    dataDir,
    port,
    config: {
      store: { backend: 'configmap' },
      kubernetes: { namespace, kubeconfig: cluster.kubeconfig },
    },
    env: { SVC_AUTH_API_KEY: KEY },
    readyTimeoutMs: 90_000,
  });
  running.push(server);
  return server;
}

async function call(server: ServerProcess, path: string, method = 'GET', body?: unknown) {
  const res = await fetch(`${server.baseURL}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${KEY}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: (text ? JSON.parse(text) : {}) as Record<string, unknown> };
}

describe('slipway with store.backend configmap', () => {
  it('keeps a deployed app across a restart: listed, Ready and serving', async () => {
    let server = await start();
    const res = await deploy(
      server.baseURL,
      KEY,
      { name: 'site' },
      await tarGzDir('examples/static'),
    );
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ app_id: 'site' });

    // Acknowledged means in the API server: the ConfigMap holds the app and its version now.
    const cm = await cluster.api.must<V1ConfigMap>(
      'GET',
      `/api/v1/namespaces/${namespace}/configmaps/slipway-app-site`,
    );
    expect(JSON.parse(cm.data?.['app.json'] ?? '{}')).toMatchObject({
      id: 'site',
      currentVersion: 1,
    });
    expect(JSON.parse(cm.data?.['versions.json'] ?? '[]')).toHaveLength(1);
    const before = await fetchApp(`http://site.localhost:${port}/`);
    expect(before.status).toBe(200);
    expect(before.body).toContain('Hello from a static Slipway app');

    // The spec: share links need a durable store; the audit trail is in memory.
    const share = await call(server, '/v1/apps/site/share-links', 'POST', {});
    expect(share.status).toBe(503);
    expect(share.body).toMatchObject({ code: 'share_links_unavailable' });
    const trail = await call(server, '/v1/audit?app=site');
    expect((trail.body.events as unknown[]).length).toBeGreaterThan(0);

    await server.stop('SIGKILL');
    server = await start();
    const list = await call(server, '/v1/apps');
    expect(list.body).toMatchObject({ total: 1, items: [{ app_id: 'site' }] });
    await waitForPhase(server.baseURL, KEY, 'site', ['Ready'], 60_000);
    const after = await fetchApp(`http://site.localhost:${port}/`);
    expect(after.status).toBe(200);
    expect(after.body).toContain('Hello from a static Slipway app');
    expect((await call(server, '/v1/apps/site/versions')).status).toBe(200);
    // In memory only: the trail did not survive the restart.
    const afterTrail = await call(server, '/v1/audit?app=site');
    expect(afterTrail.body).toEqual({ events: [] });
    await server.stop('SIGTERM');
  });
});
