/**
 * `slipway cancel` and Ctrl-C while a deploy is watched (issue 29), against the real server: the
 * watching stops, the deploy goes on, and `cancel` is how to stop it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { quickFiles, slowBuildFiles } from '../support/build-apps.js';
import { fetchApp } from '../support/deploy.js';
import { call, type TestServer } from '../support/server.js';
import { folderWith, removeFolders, runCli, startCliServer } from './run-cli.js';
import { runOnPty } from './run-on-pty.js';

const KEY = 'cli-cancel-key-0123456789abcdef';
const SLOW = 180_000;

describe('slipway cancel, and Ctrl-C while a deploy is watched', () => {
  let server: TestServer;
  let env: Record<string, string>;

  beforeAll(async () => {
    ({ server, env } = await startCliServer(KEY));
  }, SLOW);
  afterAll(async () => {
    removeFolders();
    await server.stop();
  });

  it(
    'says clearly when nothing is on its way, with a next step',
    async () => {
      const first = await runCli(['deploy', folderWith('calm', quickFiles('one'))], { env });
      expect(first.code, first.stderr).toBe(0);
      const run = await runCli(['cancel', 'calm'], { env });
      expect(run.code).toBe(1);
      expect(run.stderr).toContain('slipway: nothing_to_cancel: no deploy of calm is in flight');
      expect(run.stderr.trimEnd().split('\n').at(-1)).toBe(
        'next: nothing was cancelled; slipway apps shows what each app serves',
      );
      const missing = await runCli(['cancel', 'no-such-app'], { env });
      expect(missing.code).toBe(1);
      expect(missing.stderr).toContain('next: list your apps with slipway apps');
    },
    SLOW,
  );

  it(
    'Ctrl-C stops watching, not the deploy; slipway cancel then cancels it',
    async () => {
      const first = await runCli(['deploy', folderWith('busy', quickFiles('version one'))], {
        env,
      });
      expect(first.code, first.stderr).toBe(0);
      const url = /deployed busy version 1: (\S+)/.exec(first.stdout)?.[1] ?? '';

      const slow = slowBuildFiles('version two', { lines: 400, everyMs: 250 });
      const run = runOnPty(['deploy', folderWith('busy', slow)], env);
      await run.waitFor(/\| (\[\w+\] )?build step 2 of 400\n/, 120_000);
      run.type('\x03');
      expect(await run.exited).toBe(130);
      expect(run.screen).toContain(
        'slipway: interrupted: stopped watching; the deploy of busy goes on on the server',
      );
      expect(run.screen.trimEnd().split('\n').at(-1)).toBe(
        'next: to cancel it: slipway cancel busy',
      );
      expect(run.screen).not.toContain('deployed busy');

      // The deploy went on without the CLI: its activity is still there.
      const app = await call(server.baseURL, '/v1/apps/busy', { token: KEY });
      expect(app.body).toMatchObject({ live_version: 1, activity: { step: 'building' } });

      const cancelled = await runCli(['cancel', 'busy'], { env });
      expect(cancelled.code, cancelled.stderr).toBe(0);
      expect(cancelled.stdout.trim()).toBe(
        `cancelled version 2 of busy; version 1 still serves: ${url}`,
      );
      const after = await call(server.baseURL, '/v1/apps/busy', { token: KEY });
      expect(after.body).toMatchObject({
        phase: 'Ready',
        live_version: 1,
        last_deploy: { version: 2, outcome: 'Cancelled' },
      });
      expect(await fetchApp(url)).toMatchObject({ status: 200, body: 'version one' });

      const json = await runCli(['cancel', 'busy', '--json'], { env });
      expect(json.code).toBe(1);
      expect(JSON.parse(json.stdout)).toMatchObject({
        error: { code: 'nothing_to_cancel', exit_code: 1 },
      });
    },
    SLOW,
  );
});
