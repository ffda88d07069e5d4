import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deploy, fetchApp, waitForPhase } from '../support/deploy.js';
import { assertRegistryReachable } from '../support/general-lane-apps.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { tarGzDir } from '../support/tarball.js';

/**
 * Issue 10's corpus (test/corpus/README.md): each project deployed through the real API into real
 * sandboxes, installing from the real registries the host is configured with, and its URL
 * fetched. Each body is one the source alone cannot give: built, installed, or routed.
 */
const ALICE = 'alice-key-0123456789abcdef';
const INSTALL = 240_000;
const corpus = fileURLToPath(new URL('../corpus/', import.meta.url));

let server: TestServer;

beforeAll(async () => {
  await assertRegistryReachable();
  server = await startTestServer({
    auth: { apiKeys: [{ key: ALICE, name: 'alice' }] },
    // Half a core per sandbox: the builds (Vite, tsc) must leave the other test worker on these
    // two shared cores enough to keep its own timing promises.
    runtime: { poolSize: 1, cpu: 0.5 },
    // The whole corpus belongs to one user: more apps than a non-admin's default quota.
    limits: { maxAppsPerOwner: 20, maxSandboxMemoryMBPerOwner: 20 * 512 },
  });
}, INSTALL);
afterAll(() => server?.stop());

/** Deploys test/corpus/<dir> as app <dir>; resolves with the Ready app and its / body. */
async function ship(dir: string) {
  const res = await deploy(server.baseURL, ALICE, { name: dir }, await tarGzDir(corpus + dir));
  expect([200, 202], JSON.stringify(res.body)).toContain(res.status);
  const app = await waitForPhase(server.baseURL, ALICE, dir, ['Ready', 'Failed'], INSTALL);
  expect(app, JSON.stringify(app)).toMatchObject({ phase: 'Ready' });
  const page = await fetchApp(String(app.url));
  expect(page.status).toBe(200);
  return { app, page };
}

describe('the deploy corpus, end to end', () => {
  it('static HTML: served as it is, fast lane', async () => {
    const { app, page } = await ship('static-html');
    expect(app.runtime).toMatchObject({ template: 'static', lane: 'fast' });
    expect(page.body).toContain('<h1>corpus static html</h1>');
  });

  it(
    'Vite + React: built in the sandbox, dist/ served, never the source index.html',
    async () => {
      const { app, page } = await ship('vite-react');
      expect(app.runtime).toMatchObject({ template: 'static', lane: 'general' });
      expect(page.body).not.toContain('/src/main.jsx');
      const script = /src="(\/assets\/index-[\w-]+\.js)"/.exec(page.body)?.[1];
      expect(script, page.body).toBeDefined();
      const bundle = await fetchApp(`${String(app.url).replace(/\/$/, '')}${script}`);
      expect(bundle.status).toBe(200);
      expect(bundle.body).toContain('corpus vite react built');
    },
    INSTALL,
  );

  it(
    'Express with unvendored dependencies: npm ci from the lockfile',
    async () => {
      const { app, page } = await ship('express');
      expect(app.runtime).toMatchObject({ template: 'node', lane: 'general' });
      expect(page.body).toBe('corpus express');
    },
    INSTALL,
  );

  it(
    'TypeScript server: tsc writes dist/server.js, which runs',
    async () => {
      const { app, page } = await ship('ts-server');
      expect(app.runtime).toMatchObject({ template: 'node', lane: 'general' });
      expect(page.body).toBe('corpus typescript built');
    },
    INSTALL,
  );

  it('ESM node server: fast lane', async () => {
    const { app, page } = await ship('esm-server');
    expect(app.runtime).toMatchObject({ template: 'node', lane: 'fast' });
    expect(page.body).toBe('corpus esm');
  });

  it('a lone server.js without package.json: node, fast lane', async () => {
    const { app, page } = await ship('lone-server');
    expect(app.runtime).toMatchObject({ template: 'node', lane: 'fast' });
    expect(page.body).toBe('corpus lone server.js');
  });

  it(
    'Flask: installed from PyPI, served by gunicorn on $PORT',
    async () => {
      const { app, page } = await ship('flask');
      expect(app.runtime).toMatchObject({ template: 'python', lane: 'general' });
      expect(page.body).toBe('corpus flask');
      expect(page.headers.server).toMatch(/gunicorn/);
    },
    INSTALL,
  );

  it(
    'FastAPI: installed from PyPI, served by uvicorn on $PORT',
    async () => {
      const { app, page } = await ship('fastapi');
      expect(app.runtime).toMatchObject({ template: 'python', lane: 'general' });
      expect(page.body).toBe('corpus fastapi');
      expect(page.headers.server).toBe('uvicorn');
    },
    INSTALL,
  );

  it('a python http.server script: fast lane', async () => {
    const { app, page } = await ship('python-script');
    expect(app.runtime).toMatchObject({ template: 'python', lane: 'fast' });
    expect(page.body).toBe('corpus python script');
  });

  it('a node server hard-coded to port 3000: routed there', async () => {
    const { page } = await ship('port-3000');
    expect(page.body).toBe('corpus port 3000');
  });
});
