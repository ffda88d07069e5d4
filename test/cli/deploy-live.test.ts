/**
 * `slipway deploy` on a terminal (issue 29): the build's lines and the app's steps are shown as
 * they happen, on a pseudo-terminal against the real server; a crash's lines are shown once.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fetchApp } from '../support/deploy.js';
import type { TestServer } from '../support/server.js';
import { folderWith, removeFolders, runCli, startCliServer } from './run-cli.js';
import { runOnPty } from './run-on-pty.js';

const KEY = 'cli-live-key-0123456789abcdef';

/**
 * A general-lane app (a `build` script, no dependencies): the build prints a line every 400 ms,
 * then writes the server it runs.
 */
const BUILT_APP = {
  'package.json': JSON.stringify({
    name: 'built',
    main: 'dist/server.js',
    scripts: { build: 'node build.js' },
  }),
  'build.js': `
const fs = require('node:fs');
let step = 0;
const tick = setInterval(() => {
  step += 1;
  console.log('build step ' + step + ' of 5');
  if (step < 5) return;
  clearInterval(tick);
  fs.mkdirSync('dist', { recursive: true });
  fs.writeFileSync('dist/server.js', "require('node:http').createServer((q, s) => s.end('built\\\\n')).listen(process.env.PORT);");
}, 400);
`,
};

/** A build line as the CLI shows it, whatever tag the server puts before the build's text. */
const buildLine = (n: number): RegExp => new RegExp(`\\| (\\[\\w+\\] )?build step ${n} of 5\\n`);

describe('slipway deploy on a terminal', () => {
  let server: TestServer;
  let env: Record<string, string>;

  beforeAll(async () => {
    ({ server, env } = await startCliServer(KEY));
  });
  afterAll(async () => {
    removeFolders();
    await server.stop();
  });

  it("streams the build's lines while the deploy runs, then says it is live", async () => {
    const run = runOnPty(['deploy', folderWith('built', BUILT_APP)], env);
    await run.waitFor(buildLine(1), 90_000);
    // Shown while the build runs: the deploy has not finished yet.
    expect(run.screen).not.toContain('deployed built');
    await run.waitFor(buildLine(5), 60_000);
    expect(await run.exited).toBe(0);
    const screen = run.screen;
    const steps = [1, 2, 3, 4, 5].map((n) => screen.search(buildLine(n)));
    expect(steps.every((at) => at > 0)).toBe(true);
    expect(steps).toEqual([...steps].sort((a, b) => a - b));
    // Each line once: the stream's snapshot and its follow-up do not overlap.
    expect(screen.match(new RegExp(buildLine(3), 'g'))).toHaveLength(1);
    expect(screen.indexOf('Ready: serving version 1')).toBeGreaterThan(steps[4] ?? -1);
    const url = /deployed built version 1: (\S+)/.exec(screen)?.[1] ?? '';
    expect((await fetchApp(url)).body).toBe('built\n');
  }, 180_000);

  it("a redeploy shows only the new version's lines", async () => {
    const run = runOnPty(
      ['deploy', folderWith('built', { ...BUILT_APP, 'note.txt': 'v2' }), '--name', 'built'],
      env,
    );
    expect(await run.exited).toBe(0);
    expect(run.screen).toContain('deployed built version 2');
    expect(run.screen.match(new RegExp(buildLine(5), 'g'))).toHaveLength(1);
    expect(run.screen).toContain('| [slipway] serving version 2');
    expect(run.screen).not.toContain('| [slipway] serving version 1');
  }, 180_000);

  it("a rollback streams its new version's lines too, and its phases", async () => {
    const run = runOnPty(['rollback', 'built', '1'], env);
    expect(await run.exited).toBe(0);
    expect(run.screen).toContain('| [slipway] serving version 3');
    expect(run.screen).not.toContain('| [slipway] serving version 2');
    expect(run.screen).toContain('Ready: serving version 3');
    expect(run.screen).toContain('rolled built back to version 1, now serving as version 3');
  }, 180_000);

  it("a crash's stack is printed once, on a terminal or not, and the error ends with a next step", async () => {
    const dir = folderWith('crashes', {
      'package.json': JSON.stringify({ name: 'crashes', main: 'server.js' }),
      'server.js': "throw new Error('cannot find the config');\n",
    });
    const next = 'next: fix the app and deploy again; its logs: slipway logs crashes';
    const run = runOnPty(['deploy', dir], env);
    expect(await run.exited).toBe(1);
    expect(run.screen).toContain('slipway: deploy_failed: ');
    expect(run.screen.match(/Error: cannot find the config/g)).toHaveLength(1);
    expect(run.screen.match(/at Object.<anonymous>/g)).toHaveLength(1);
    expect(run.screen.trimEnd().split('\n').at(-1)).toBe(next);

    // Piped, no lines are streamed: the error's last lines are where the stack is, once.
    const piped = await runCli(['deploy', dir], { env });
    expect(piped.code).toBe(1);
    expect(piped.stderr.match(/Error: cannot find the config/g)).toHaveLength(1);
    expect(piped.stderr).toMatch(/last log lines:\n(.*\n)*.*Error: cannot find the config/);
    expect(piped.stderr.trimEnd().split('\n').at(-1)).toBe(next);

    // Under --json the message is the one-line diagnosis; the lines travel apart from it.
    const json = await runCli(['deploy', dir, '--json'], { env });
    expect(json.code).toBe(1);
    const { error } = JSON.parse(json.stdout) as {
      error: { message: string; hint: string; details: { logs: string[] } };
    };
    expect(error.message).toMatch(/^deploy of crashes failed: AppExited: [^\n]*$/);
    expect(error.details.logs.join('\n')).toContain('Error: cannot find the config');
    expect(error.hint).toBe(next.replace('next: ', ''));
  }, 120_000);
});
