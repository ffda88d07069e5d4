import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readHostEnv } from '../../src/runtime/local/host-env.js';
import { readPackageHosts } from '../../src/runtime/local/package-hosts.js';
import { RuntimeError, type LogLine } from '../../src/runtime/runtime.js';
import { claimOnly, deploy, inject, request, startRuntime, type TestRuntime } from './support.js';

/**
 * The build step and the port rules of issue 10, with sources that need no registry: their
 * builds are plain node scripts, so npm installs nothing and the tests stay fast.
 */
let t: TestRuntime;

beforeAll(async () => {
  const env = readHostEnv();
  const packageHosts = await readPackageHosts(env.node, env.python, env.extraReadOnly);
  // A start timeout far above the idle limit: failing fast must not wait for it.
  t = await startRuntime({ poolSize: 1, startTimeoutMs: 30_000, packageHosts });
}, 60_000);
afterAll(() => t?.close());

const BUILD_SITE = `
import { mkdirSync, writeFileSync } from 'node:fs';
mkdirSync('dist', { recursive: true });
writeFileSync('dist/index.html', '<h1>built ' + (1 + 1) + '</h1>');
`;

const BUILD_SERVER = `
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
mkdirSync('dist', { recursive: true });
writeFileSync('dist/server.js', readFileSync('src/server.js', 'utf8').replace('SOURCE', 'BUILT'));
`;

describe('general lane: the build runs before the entrypoint is looked up', () => {
  it('serves a static site from what npm run build wrote, never the unbuilt index.html', async () => {
    const sandbox = await deploy(
      t,
      'static',
      {
        'package.json': JSON.stringify({ scripts: { build: 'node build.mjs' } }),
        'index.html': '<script type="module" src="/src/main.jsx"></script>',
        'build.mjs': BUILD_SITE,
      },
      { lane: 'general', entrypoint: '' },
    );
    const page = await request(sandbox, '/');
    expect(page).toMatchObject({ status: 200, body: '<h1>built 2</h1>' });
  });

  it('runs a node server the build writes into dist/', async () => {
    const sandbox = await deploy(
      t,
      'node',
      {
        'package.json': JSON.stringify({
          main: 'dist/server.js',
          scripts: { build: 'node build.mjs' },
        }),
        'build.mjs': BUILD_SERVER,
        'src/server.js': `require('node:http').createServer((q, s) => s.end('SOURCE')).listen(process.env.PORT);`,
      },
      { lane: 'general', entrypoint: 'dist/server.js' },
    );
    expect((await request(sandbox, '/')).body).toBe('BUILT');
  });

  it('refuses to serve a site whose build has not run (fast lane), instead of its source', async () => {
    const err = await deploy(t, 'static', {
      'package.json': JSON.stringify({ scripts: { build: 'vite build' } }),
      'index.html': '<script type="module" src="/src/main.jsx"></script>',
    }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RuntimeError);
    expect((err as RuntimeError).message).toContain('build script that did not run');
  });
});

describe('the port the app listens on', () => {
  it('routes to the one other port an app listens on, and says so in its log', async () => {
    const sandbox = await claimOnly(t, 'node');
    const lines: LogLine[] = [];
    sandbox.onLog((line) => lines.push(line));
    await inject(t, sandbox, 'node', {
      'server.js': `require('node:http').createServer((q, s) => s.end('on 3000')).listen(3000);`,
    });
    expect((await request(sandbox, '/')).body).toBe('on 3000');
    expect(lines.map((l) => l.text)).toContain(
      '[slipway] the app listens on port 3000, not on $PORT (8080): routing to 3000',
    );
  });

  it.each([
    [
      'python',
      { 'app.py': 'import time\nprint("up, but no server", flush=True)\ntime.sleep(600)\n' },
    ],
    // In the agent's own process: its timers keep the loop alive, and it does nothing.
    ['node', { 'server.js': 'console.log("up, but no server"); setInterval(() => {}, 1000);' }],
  ])(
    'fails within seconds, naming $PORT, a %s app that listens nowhere and sleeps',
    async (template, files) => {
      const err = await deploy(t, template, files).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(RuntimeError);
      expect((err as RuntimeError).transient).toBe(false);
      // The idle rule ended it (its own message), not the 30 s start timeout.
      expect((err as RuntimeError).message).toMatch(
        /^the app is not listening on \$PORT \(8080\), nor on any other TCP port, and has printed nothing and used no CPU for 5 s/,
      );
    },
  );
});
