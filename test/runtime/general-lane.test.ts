import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { planStart } from '../../src/actors/start-plan.js';
import { createMemoryStore } from '../../src/persistence/memory-store.js';
import { readHostEnv } from '../../src/runtime/local/host-env.js';
import { openEgressDoor } from '../../src/runtime/local/egress-door.js';
import { createLocalRuntime } from '../../src/runtime/local/local-runtime.js';
import { readPackageHosts, type PackageHosts } from '../../src/runtime/local/package-hosts.js';
import { createDiskSourceStore } from '../../src/sources/disk-source-store.js';
import { RuntimeError, type LogLine } from '../../src/runtime/runtime.js';
import {
  assertRegistryReachable,
  buildApp,
  depApp,
  hostRegistry,
  connectStatus,
  MISSING_DEP,
  missingDepApp,
  probeApp,
  SERVER_BODY,
} from '../support/general-lane-apps.js';
import type { TarEntries } from '../support/tarball.js';
import {
  PIP_GREETING,
  PIP_PACKAGE,
  pyReportApp,
  startPipIndex,
  type PipIndex,
} from './pip-index.js';
import {
  claimOnly,
  deploy,
  eventually,
  inject,
  report,
  request,
  startRuntime,
  type DeployOptions,
  type TestRuntime,
} from './support.js';

const INSTALL = 120_000;
let t: TestRuntime;
let hosts: PackageHosts;
let registryHost: string;
let pipIndex: PipIndex;

beforeAll(async () => {
  await assertRegistryReachable();
  registryHost = new URL(await hostRegistry()).hostname;
  pipIndex = await startPipIndex();
  const env = readHostEnv();
  const real = await readPackageHosts(env.node, env.python, env.extraReadOnly);
  // npm as the host has it; pip from the test's own index (this machine configures none).
  hosts = { ...real, pip: { index: pipIndex.url }, missing: { npm: real.missing.npm } };
  t = await startRuntime({ poolSize: 1, installTimeoutMs: INSTALL, packageHosts: hosts });
}, INSTALL);

afterAll(async () => {
  await t?.close();
  await pipIndex?.close();
});

/** Deploys on the general lane, collecting the app's log lines from before the inject on. */
async function general(template: string, files: TarEntries, opts: DeployOptions = {}) {
  const sandbox = await claimOnly(t, template);
  const lines: LogLine[] = [];
  sandbox.onLog((line) => lines.push(line));
  const started = performance.now();
  await inject(t, sandbox, template, files, { ...opts, lane: 'general' });
  return { sandbox, lines, texts: () => lines.map((l) => l.text), ms: performance.now() - started };
}

describe('general lane, node: installs in the sandbox from the host registry', () => {
  it(
    'runs npm ci for a lockfile, tags its output as install lines, then serves',
    async () => {
      expect(hosts.npm?.registry, hosts.missing.npm).toBeDefined();
      const { sandbox, texts, ms } = await general('node', await depApp());
      expect((await request(sandbox, '/')).body).toBe(SERVER_BODY);
      expect(texts()).toContain('[install] $ npm ci --no-audit --no-fund --omit=dev');
      expect(texts().some((l) => /^\[install\] added 1 package/.test(l))).toBe(true);
      expect(texts().some((l) => /^\[install\] npm ci done in/.test(l))).toBe(true);
      const started = t.logs.find((l) => l.msg === 'install started');
      expect(started?.extra).toMatchObject({ index: [`${registryHost}:443`] });
      console.log(`general lane node deploy (claim excluded): ${Math.round(ms)} ms`);
      await t.runtime.reap(sandbox);
    },
    INSTALL,
  );

  it(
    'runs npm install when there is no lockfile',
    async () => {
      const { sandbox, texts } = await general('node', await depApp({ lock: false }));
      expect((await request(sandbox, '/')).body).toBe(SERVER_BODY);
      expect(texts()).toContain('[install] $ npm install --no-audit --no-fund --omit=dev');
      await t.runtime.reap(sandbox);
    },
    INSTALL,
  );

  it(
    'installs dev dependencies for a build script, runs the build and keeps them',
    async () => {
      const { sandbox, texts } = await general('node', await buildApp());
      expect((await request(sandbox, '/')).body).toBe(
        'built with is-number: true; dev dependency kept: true',
      );
      expect(texts()).toContain('[install] $ npm ci --no-audit --no-fund --include=dev');
      expect(texts()).toContain('[install] $ npm run build');
      await t.runtime.reap(sandbox);
    },
    INSTALL,
  );

  it(
    'fails a failing install with InstallFailed, npm exit code and last lines, and reaps',
    async () => {
      const sandbox = await claimOnly(t, 'node');
      const err = await inject(t, sandbox, 'node', missingDepApp(), { lane: 'general' }).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(RuntimeError);
      const failure = err as RuntimeError;
      expect(failure.transient).toBe(false);
      expect(failure.reason).toBe('InstallFailed');
      expect(failure.message).toMatch(/^npm ci failed with exit code [1-9]\d*; last lines:\n/);
      expect(failure.message).toContain(MISSING_DEP);
      expect(failure.message).toMatch(/404/);
      await eventually(() => !sandbox.alive, 'the failed sandbox to be reaped');
    },
    INSTALL,
  );

  it(
    'narrows egress back to the app allowed_hosts: the app cannot reach the registry',
    async () => {
      const env = [{ name: 'REGISTRY_HOST', value: registryHost }];
      const { sandbox } = await general('node', await probeApp(), { env, allowedHosts: [] });
      const probe = await request(sandbox, '/probe');
      expect(probe.body).toMatch(/^HTTP\/1\.1 403 /);
      const denied = t.logs.filter((l) => l.msg === 'egress denied');
      expect(denied.some((l) => (l.extra as { host?: string }).host === registryHost)).toBe(true);
      await t.runtime.reap(sandbox);
    },
    INSTALL,
  );
});

describe('general lane, python: pip installs from the configured index', () => {
  it(
    'installs requirements.txt into .slipway/site-packages and puts it on sys.path',
    async () => {
      const files = {
        'requirements.txt': `${PIP_PACKAGE}==1.0\n`,
        'app.py': pyReportApp('import slipway_demo\nvalue = slipway_demo.GREETING'),
      };
      const { sandbox, texts } = await general('python', files);
      const body = await report<{ value: string; path: string }>(sandbox);
      expect(body.value).toBe(PIP_GREETING);
      expect(body.path.split(':')).toContain('/app/.slipway/site-packages');
      expect(texts().some((l) => l.startsWith('[install] $ pip install'))).toBe(true);
      expect(pipIndex.requests).toContain(`/simple/${PIP_PACKAGE}/`);
      await t.runtime.reap(sandbox);
    },
    INSTALL,
  );

  it('fast lane: vendor/ and __pypackages__/<version>/lib are importable', async () => {
    const version = execFileSync('/usr/bin/python3', [
      '-c',
      'import sys; print("%d.%d" % sys.version_info[:2])',
    ])
      .toString()
      .trim();
    const sandbox = await deploy(t, 'python', {
      'vendor/vendored/__init__.py': "NAME = 'vendor'\n",
      [`__pypackages__/${version}/lib/pep582/__init__.py`]: "NAME = 'pypackages'\n",
      'app.py': pyReportApp('import vendored, pep582\nvalue = vendored.NAME + "+" + pep582.NAME'),
    });
    const body = await report<{ value: string; path: string }>(sandbox);
    expect(body.value).toBe('vendor+pypackages');
    expect(body.path).toBe(`/app/vendor:/app/__pypackages__/${version}/lib`);
    await t.runtime.reap(sandbox);
  });
});

describe('egress door: rules change while tunnels are open', () => {
  it('lets a widened door tunnel, then cuts the tunnel and refuses once narrowed', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'slipway-door-'));
    const echo = net.createServer((s) => s.pipe(s));
    await new Promise<void>((r) => echo.listen(0, '127.0.0.1', r));
    const port = (echo.address() as net.AddressInfo).port;
    const path = join(dir, 'egress.sock');
    const door = await openEgressDoor({ path, allowedHosts: [], allowPrivate: [], log: () => {} });
    try {
      const target = `127.0.0.1:${port}`;
      expect(await connectStatus(path, target)).toMatch(/^HTTP\/1\.1 403 /);
      door.setRules({ allowedHosts: [target], allowPrivate: ['127.0.0.1'] });
      const tunnel = net.connect(path);
      const closed = new Promise<void>((r) => tunnel.on('close', () => r()));
      tunnel.on('error', () => undefined);
      let got = '';
      tunnel.on('data', (c: Buffer) => (got += c.toString()));
      tunnel.write(`CONNECT ${target} HTTP/1.1\r\nHost: ${target}\r\n\r\nping`);
      await eventually(() => got.includes('ping'), 'the echo through the tunnel');
      expect(got).toMatch(/^HTTP\/1\.1 200 /);
      door.setRules({ allowedHosts: [], allowPrivate: [] });
      await closed;
      expect(await connectStatus(path, target)).toMatch(/^HTTP\/1\.1 403 /);
    } finally {
      await door.close();
      echo.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('lane availability', () => {
  it('refuses the python general lane before any sandbox when no index is configured', () => {
    const runtime = createLocalRuntime({
      dataDir: '/nonexistent',
      sourceStore: createDiskSourceStore('/nonexistent'),
      agentToken: 'x'.repeat(32),
      poolSize: 0,
      startTimeoutMs: 1_000,
      memoryLimitMB: 64,
      pidsLimit: 16,
      allowPrivate: [],
      packageHosts: { ...hosts, pip: undefined, missing: { pip: 'no index on this host' } },
    });
    const store = createMemoryStore();
    const now = new Date().toISOString();
    store.putApp({
      ...{ id: 'py', name: 'py', ownerId: 'alice', phase: 'Pending', reason: '', message: '' },
      ...{ lane: 'general', template: 'python', env: [], allowedHosts: [], ttl: '30m' },
      ...{ currentVersion: 0, createdAt: now, lastDeployedAt: now },
    });
    store.addVersion({
      ...{ appId: 'py', version: 1, timestamp: now, template: 'python', lane: 'general' },
      ...{ sourceHash: 'sha256:1', sourceKey: `py.v1.${'0'.repeat(32)}` },
    });
    const plan = planStart(store, runtime, 'py', 1);
    expect(plan).toMatchObject({ ok: false, reason: 'LaneUnavailable' });
    const message = plan.ok ? '' : plan.message;
    expect(message).toContain('no index on this host');
    expect(message).toContain('pip install -r requirements.txt --target vendor');
    expect(runtime.laneUnavailable('python', 'fast')).toBeUndefined();
    expect(runtime.laneUnavailable('node', 'general')).toBeUndefined();
  });
});
