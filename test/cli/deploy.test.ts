/** `slipway deploy` against the real server: packing, ignore rules, flags, failures (issue 18). */
import { resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deploy, fetchApp } from '../support/deploy.js';
import { tarGz } from '../support/tarball.js';
import type { TestServer } from '../support/server.js';
import { appFiles, folderWith, removeFolders, runCli, startCliServer } from './run-cli.js';

const KEY = 'cli-deploy-key-0123456789abcdef';
const EXAMPLE = resolve(import.meta.dirname, '../../examples/node');

describe('slipway deploy', () => {
  let server: TestServer;
  let env: Record<string, string>;

  beforeAll(async () => {
    ({ server, env } = await startCliServer(KEY));
  });
  afterAll(async () => {
    removeFolders();
    await server.stop();
  });

  it('deploys examples/node with env, prints the live URL, and the URL serves the app', async () => {
    const run = await runCli(['deploy', EXAMPLE, '--name', 'hello', '--env', 'GREETING=hi'], {
      env,
    });
    expect(run.stderr).not.toMatch(/\n\s+at /);
    expect(run.code).toBe(0);
    const url = `http://hello.localhost:${new URL(server.baseURL).port}`;
    expect(run.stdout.trim()).toBe(`deployed hello version 1: ${url}`);
    expect(run.stderr).toContain('Ready: serving version 1');
    expect((await fetchApp(`${url}/`)).body).toBe('hello from node\n');
    expect(JSON.parse((await fetchApp(`${url}/env`)).body)).toEqual({ GREETING: 'hi' });
  });

  it('--json prints the app as JSON only; the name defaults to the sanitised folder name', async () => {
    const dir = folderWith('My_Cool App', appFiles('json'));
    const run = await runCli(['deploy', dir, '--json', '--ttl', '1h'], { env });
    expect(run.code).toBe(0);
    expect(run.stderr).toBe('');
    const app = JSON.parse(run.stdout) as Record<string, unknown>;
    expect(app).toMatchObject({ app_id: 'my-cool-app', phase: 'Ready', live_version: 1 });
    expect((await fetchApp(String(app.url))).body).toBe('json\n');

    const status = await runCli(['status', 'my-cool-app', '--json'], { env });
    expect(JSON.parse(status.stdout)).toMatchObject({ app_id: 'my-cool-app', phase: 'Ready' });
    const list = await runCli(['--json', 'ls'], { env });
    const names = (JSON.parse(list.stdout) as { items: { name: string }[] }).items.map(
      (a) => a.name,
    );
    expect(names).toContain('my-cool-app');
  });

  it('leaves out files .gitignore (nested too) and .slipwayignore name, .git and node_modules', async () => {
    const dir = folderWith('ignores', {
      ...appFiles('ignores'),
      // keep.me is git-ignored too: the .slipwayignore's !keep.me takes it back.
      '.gitignore': 'secret.txt\nbuild/\nkeep.me\n',
      'sub/.gitignore': '*.local\n',
      'sub/kept.txt': 'kept',
      'sub/conf.local': 'nested-ignored',
      'secret.txt': 'top-secret',
      'build/out.js': 'built',
      '.slipwayignore': 'private/\n!keep.me\n',
      'private/notes.txt': 'private',
      'keep.me': 'kept by negation',
      '.git/config': '[core]',
      'node_modules/dep/index.js': 'module.exports = 1',
    });
    const run = await runCli(['deploy', dir, '--json'], { env });
    expect(run.code).toBe(0);
    const url = String((JSON.parse(run.stdout) as { url: string }).url);
    const read = async (p: string) =>
      (await fetchApp(`${url}/file?p=${encodeURIComponent(p)}`)).status;
    expect(await read('sub/kept.txt')).toBe(200);
    expect(await read('keep.me')).toBe(200);
    for (const gone of [
      'secret.txt',
      'build/out.js',
      'sub/conf.local',
      'private/notes.txt',
      '.git/config',
      'node_modules/dep/index.js',
    ]) {
      expect({ gone, status: await read(gone) }).toEqual({ gone, status: 404 });
    }
  });

  it('waits through a 202 (an app slower than the 10 s answer) until it serves', async () => {
    const dir = folderWith('slowpoke', {
      'package.json': JSON.stringify({ name: 'slowpoke', main: 'server.js' }),
      // Output every second is a sign of life, so the start is slow, not dead.
      'server.js': `
const tick = setInterval(() => console.log('warming up'), 1000);
setTimeout(() => {
  clearInterval(tick);
  require('node:http').createServer((req, res) => res.end('slow but here\\n')).listen(process.env.PORT);
}, 11500);
`,
    });
    const run = await runCli(['deploy', dir], { env });
    expect(run.code).toBe(0);
    expect(run.stderr).toContain('accepted; waiting for it to start');
    expect(run.stderr).toMatch(/Ready: serving version 1\n/);
    const url = run.stdout.trim().split(': ').at(-1) ?? '';
    expect((await fetchApp(url)).body).toBe('slow but here\n');
  }, 60_000);

  it('a deploy that fails exits 1 with the server diagnosis and a next step', async () => {
    const dir = folderWith('crasher', {
      'package.json': JSON.stringify({ name: 'crasher', main: 'server.js' }),
      'server.js': "console.error('boom at start'); process.exit(3);\n",
    });
    const run = await runCli(['deploy', dir], { env });
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/slipway: deploy_failed: .*exited with code 3/);
    expect(run.stderr).toContain('next: ');
    expect(run.stderr).not.toMatch(/\n\s+at /);
  });

  it('--access is sent as given: the CLI exits as the server answers and prints its message', async () => {
    const dir = folderWith('gated', appFiles('gated'));
    const direct = await deploy(
      server.baseURL,
      KEY,
      { name: 'gated-direct', access: 'private' },
      await tarGz(appFiles('gated')),
    );
    const run = await runCli(['deploy', dir, '--access', 'private'], { env });
    if (direct.status >= 400) {
      expect(run.code).toBe(1);
      expect(run.stderr).toContain(`${String(direct.body.code)}: ${String(direct.body.message)}`);
    } else {
      expect(run.code).toBe(0);
    }
    const bad = await runCli(['deploy', dir, '--access', 'everyone'], { env });
    expect(bad.code).toBe(2);
  });

  it('usage errors exit 2 without calling the server', async () => {
    const missing = await runCli(['deploy', '/nonexistent/folder'], { env });
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('is not a folder');
    const badEnv = await runCli(['deploy', EXAMPLE, '--env', 'NOEQUALS', '--json'], { env });
    expect(badEnv.code).toBe(2);
    expect(JSON.parse(badEnv.stdout)).toMatchObject({ error: { code: 'usage', exit_code: 2 } });
  });
});
