// The images test/k8s/images.sh builds without a container engine (build.sh runs it): valid OCI
// archives with the Dockerfiles' user, env, entry point and volumes, named as the chart's values
// name them; each root filesystem runs its own Node; and they really run: the control plane from
// its image (image-server.ts) on the chart's config, its apps in sandbox pods the test node runs
// from the agent image (image-pod.ts), under the pod's user, read-only root, emptyDir size limits
// and memory limit.
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { deploy, fetchApp, waitForPhase } from '../support/deploy.js';
import { MOTO_CREDENTIALS, MOTO_SETUP_TIMEOUT_MS } from '../support/moto.js';
import { tarGzDir } from '../support/tarball.js';
import { applyChartSandboxes, CHART, render } from './chart-tools.js';
import { cacheDir } from './cluster.js';
import { imageBundles } from './image-pod.js';
import { bundlesDir, imageProcess } from './image-run.js';
import { startImageServer, waitForWarmReady, type ImageServer } from './image-server.js';
import { podPorts } from './pod-agent.js';
import { startSlipwayEnv, type SlipwayEnv } from './slipway-env.js';

const IMAGES = join(cacheDir, 'images');
const NODE_VERSION = /^NODE_VERSION=\$\{SLIPWAY_IMAGE_NODE:-([\d.]+)\}/m.exec(
  readFileSync(new URL('images.sh', import.meta.url), 'utf8'),
)?.[1];
const values = parse(readFileSync(join(CHART, 'values.yaml'), 'utf8')) as {
  image: { repository: string };
  sandboxes: { image: string };
};
const appVersion = (
  parse(readFileSync(join(CHART, 'Chart.yaml'), 'utf8')) as { appVersion: string }
).appVersion;

/** Runs argv in an image's rootfs (read-only, uid 65532, /tmp a tmpfs) and returns its stdout. */
function inImage(
  image: string,
  args: string[],
  tmpfs: { path: string; bytes?: number }[] = [{ path: '/tmp' }],
): string {
  const run = imageProcess({
    bundle: join(bundlesDir, image),
    name: `check-${image}`,
    args,
    tmpfs,
  });
  const res = spawnSync(run.command, run.args, { env: run.env, encoding: 'utf8' });
  run.cleanup();
  if (res.status !== 0) throw new Error(`${args.join(' ')} → ${res.status}: ${res.stderr}`);
  return res.stdout.trim();
}

describe('the images images.sh builds', () => {
  it.each([
    ['slipway', `docker.io/${values.image.repository}:${appVersion}`],
    ['slipway-agent', `docker.io/${values.sandboxes.image}`],
  ])('%s.oci.tar is an OCI archive skopeo reads, named %s', (image, ref) => {
    const archive = join(IMAGES, `${image}.oci.tar`);
    const index = JSON.parse(
      execFileSync('tar', ['-xOf', archive, 'index.json'], { encoding: 'utf8' }),
    ) as {
      manifests: { annotations: Record<string, string> }[];
    };
    expect(index.manifests.map((m) => m.annotations['io.containerd.image.name'])).toEqual([ref]);
    const inspected = JSON.parse(
      execFileSync('skopeo', ['inspect', '--config', `oci-archive:${archive}`], {
        encoding: 'utf8',
      }),
    ) as {
      os: string;
      architecture: string;
      rootfs: { diff_ids: string[] };
      config: Record<string, unknown>;
    };
    expect(inspected.os).toBe('linux');
    expect(inspected.rootfs.diff_ids).toHaveLength(3); // Debian, Node, the app
    expect(inspected.config.User).toBe('65532:65532');
    expect(inspected.config.Env).toContain(`NODE_VERSION=${NODE_VERSION}`);
    expect(inspected.config.Env).toContain('HOME=/tmp');
    if (image === 'slipway') {
      expect(inspected.config.Entrypoint).toEqual(['node', '--import', 'tsx', 'src/main.ts']);
      expect(inspected.config.WorkingDir).toBe('/opt/slipway');
      expect(Object.keys(inspected.config.Volumes as object).sort()).toEqual(['/data', '/tmp']);
      expect(inspected.config.Env).toContain('SVC_LISTEN=0.0.0.0:8080');
    } else {
      expect(inspected.config.Entrypoint).toEqual(['node', '/opt/slipway/agent.mjs']);
      expect(Object.keys(inspected.config.Volumes as object).sort()).toEqual(['/app', '/tmp']);
    }
  });

  it.each(['slipway', 'slipway-agent'])(
    "%s's rootfs runs its own Node, not the host's",
    (image) => {
      expect(NODE_VERSION).toMatch(/^26\./);
      expect(inImage(image, ['node', '--version'])).toBe(`v${NODE_VERSION}`);
      expect(process.version).not.toBe(`v${NODE_VERSION}`);
    },
  );

  it("the control plane's better-sqlite3 loads on the image's Node; code is read-only to uid 65532", () => {
    const out = inImage('slipway', [
      'node',
      '-e',
      `const D = require('/opt/slipway/node_modules/better-sqlite3');
       const row = new D(':memory:').prepare('select sqlite_version() as v').get();
       let write = 'written';
       try { require('node:fs').writeFileSync('/opt/slipway/src/x', ''); } catch (e) { write = e.code; }
       console.log(JSON.stringify({ v: row.v, uid: process.getuid(), write }));`,
    ]);
    const got = JSON.parse(out) as { v: string; uid: number; write: string };
    expect(got.v).toMatch(/^3\./);
    expect(got.uid).toBe(65532);
    expect(got.write).toBe('EROFS');
  });

  it("a run's memory limit kills what goes over it; an emptyDir's sizeLimit ends writes (ENOSPC)", () => {
    // 640 MiB touched, in 16 MiB buffers (outside V8's heap limit).
    const hog = `const b = []; for (let i = 0; i < 40; i++) b.push(Buffer.alloc(16 * 2 ** 20, 1)); console.log('survived');`;
    const under = (memoryBytes: number) => {
      const run = imageProcess({
        bundle: join(bundlesDir, 'slipway-agent'),
        name: `check-memory-${memoryBytes}`,
        args: ['node', '-e', hog],
        tmpfs: [{ path: '/tmp' }],
        memoryBytes,
      });
      const res = spawnSync(run.command, run.args, { env: run.env, encoding: 'utf8' });
      run.cleanup();
      return res;
    };
    expect(under(2 ** 30).stdout.trim()).toBe('survived');
    const killed = under(128 * 2 ** 20);
    expect(killed.stdout).not.toContain('survived');
    expect(killed.status).toBe(128 + 9); // bwrap's exit status for a child killed by SIGKILL
    const write = `try { require('node:fs').writeFileSync('/tmp/f', Buffer.alloc(2 * 2 ** 20)); console.log('written'); } catch (e) { console.log(e.code); }`;
    expect(
      inImage('slipway-agent', ['node', '-e', write], [{ path: '/tmp', bytes: 2 ** 20 }]),
    ).toBe('ENOSPC');
    expect(
      inImage('slipway-agent', ['node', '-e', write], [{ path: '/tmp', bytes: 4 * 2 ** 20 }]),
    ).toBe('written');
  });

  it('the agent image has python3 (the python template)', () => {
    expect(inImage('slipway-agent', ['python3', '--version'])).toMatch(/^Python 3\.11\./);
  });

  it('bundles are found by the image references the chart names', () => {
    const bundles = imageBundles();
    expect(bundles.get(values.sandboxes.image)).toBe(join(bundlesDir, 'slipway-agent'));
    expect(bundles.get(`${values.image.repository}:${appVersion}`)).toBe(
      join(bundlesDir, 'slipway'),
    );
  });
});

const NS = 'slipway';
const ALICE = 'alice-images-key-0123456789abcdef';
const ADMIN = 'ops-images-key-0123456789abcdef';
const BUCKET = 'images';
const GATE_IP = `10.96.${200 + Math.floor(Math.random() * 50)}.${2 + Math.floor(Math.random() * 250)}`;

/** A node app that tells what it runs on, from inside its sandbox pod. */
const PROBE_APP = `import { createServer } from 'node:http';
import { statfsSync, writeFileSync } from 'node:fs';
const tryWrite = (f) => { try { writeFileSync(f, 'x'); return 'written'; } catch (e) { return e.code; } };
createServer((req, res) => {
  const tmp = statfsSync('/tmp');
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(JSON.stringify({
    node: process.version,
    uid: process.getuid(),
    root: tryWrite('/opt/probe'),
    app: tryWrite('/app/probe'),
    tmpBytes: tmp.blocks * tmp.bsize,
  }));
}).listen(Number(process.env.PORT));
`;

describe('the control plane from its image, apps in pods from the agent image (real API server, agent-sandbox, test node)', () => {
  let env: SlipwayEnv;
  let server: ImageServer;
  const dir = mkdtempSync(join(tmpdir(), 'slipway-images-'));

  beforeAll(async () => {
    env = await startSlipwayEnv(NS, BUCKET, { images: { extraEnv: podPorts } });
    const { cluster } = env;
    const { objects } = await render(join(dir, 'helm'), [
      '--set',
      'sandboxes.poolSize=1',
      '--set',
      'sandboxes.templates={node}',
    ]);
    const chartConfig = (await applyChartSandboxes(cluster, NS, objects, GATE_IP)) as Record<
      string,
      unknown
    > & { runtime: { kubernetes: { egress: object } } };
    server = await startImageServer({
      bundle: join(bundlesDir, 'slipway'),
      dir,
      // A subdirectory of the image's SVC_DATA_DIR=/data, which Slipway (uid 65532) makes 0700
      // itself: the emptyDir's root is root's (0777), which it cannot tighten (it starts there
      // with a warning: test/persistence/private-files.test.ts).
      env: { ...MOTO_CREDENTIALS, SVC_DATA_DIR: '/data/slipway' },
      config: {
        ...chartConfig,
        server: { restartContinuity: false },
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
      },
    });
  }, MOTO_SETUP_TIMEOUT_MS);

  afterAll(async () => {
    await server?.stop();
    await env?.stop();
    execFileSync('ip', ['addr', 'del', `${GATE_IP}/32`, 'dev', 'lo']);
    if (!process.env.SLIPWAY_K8S_KEEP) rmSync(dir, { recursive: true, force: true });
  });

  it('answers /readyz 200 with its pool filled by a pod from the agent image', async () => {
    const res = await waitForWarmReady(server.baseURL, ADMIN, 90_000);
    expect(res.status).toBe(200);
  });

  it("deploys an app that runs in the pod on the image's Node, as uid 65532, root read-only, limits applied", async () => {
    const src = mkdtempSync(join(dir, 'probe-'));
    writeFileSync(
      join(src, 'package.json'),
      JSON.stringify({ name: 'probe', type: 'module', scripts: { start: 'node server.js' } }),
    );
    writeFileSync(join(src, 'server.js'), PROBE_APP);
    const res = await deploy(server.baseURL, ALICE, { name: 'image-probe' }, await tarGzDir(src));
    expect([200, 202]).toContain(res.status);
    const app = await waitForPhase(
      server.baseURL,
      ALICE,
      'image-probe',
      ['Ready', 'Failed'],
      90_000,
    );
    expect(app.phase, JSON.stringify(app)).toBe('Ready');
    const seen = JSON.parse((await fetchApp(String(app.url))).body) as Record<string, unknown>;
    expect(seen).toEqual({
      node: `v${NODE_VERSION}`,
      uid: 65532,
      root: 'EROFS',
      app: 'written',
      tmpBytes: 512 * 2 ** 20, // the template's emptyDir sizeLimit (sandboxes.memoryLimitMB)
    });
    // The pod's processes are in a memory cgroup of the template's limit.
    const [pod] = [...env.node.running().values()].filter((p) => p.pid !== undefined);
    const line = readFileSync(`/proc/${pod?.pid}/cgroup`, 'utf8')
      .split('\n')
      .find((l) => /:memory:|^0::/.test(l));
    const path = line?.split(':')[2] ?? '';
    const limitFile = line?.startsWith('0::')
      ? join('/sys/fs/cgroup', path, 'memory.max')
      : join('/sys/fs/cgroup/memory', path, 'memory.limit_in_bytes');
    expect(path).toContain('slipway-test-node');
    expect(Number(readFileSync(limitFile, 'utf8'))).toBe(512 * 2 ** 20);
  });
});
