/** `slipway env ls|set|unset` and `slipway whoami` against the real server (issue 28). */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fetchApp } from '../support/deploy.js';
import type { TestServer } from '../support/server.js';
import { appFiles, folderWith, removeFolders, runCli, startCliServer } from './run-cli.js';

const KEY = 'cli-env-key-0123456789abcdef';
const PIPED = 'piped-secret-4e8a1c7b';

describe('slipway env and whoami', { timeout: 120_000 }, () => {
  let server: TestServer;
  let env: Record<string, string>;
  let url: string;
  const greeting = async () => (await fetchApp(`${url}/env`)).body;

  beforeAll(async () => {
    ({ server, env } = await startCliServer(KEY));
    url = `http://envy.localhost:${new URL(server.baseURL).port}`;
  });
  afterAll(async () => {
    removeFolders();
    await server.stop();
  });

  it('sets, lists and unsets variables as new releases; a redeploy without --env keeps them', async () => {
    const dir = folderWith('envy', appFiles('envy'));
    expect((await runCli(['deploy', dir, '--env', 'GREETING=one'], { env })).code).toBe(0);
    expect(await greeting()).toBe('one');

    const set = await runCli(['env', 'set', 'envy', 'GREETING=two', 'EXTRA=x'], { env });
    expect(set.stderr).toBe('');
    expect(set.code).toBe(0);
    expect(set.stdout.trim()).toBe(`set GREETING, EXTRA on envy: version 2 serves at ${url}`);
    expect(await greeting()).toBe('two');

    const ls = await runCli(['env', 'ls', 'envy'], { env });
    expect(ls.stdout.trim().split('\n')).toEqual(['GREETING', 'EXTRA']);
    const json = await runCli(['env', 'ls', 'envy', '--json'], { env });
    expect(JSON.parse(json.stdout)).toEqual({
      app_id: 'envy',
      env: [{ name: 'GREETING' }, { name: 'EXTRA' }],
    });

    // Off the command line: the value never shows in what the CLI prints either.
    const piped = await runCli(['env', 'set', 'envy', '--stdin', '--json'], {
      env,
      input: `GREETING=${PIPED}\n`,
    });
    expect(piped.code).toBe(0);
    expect(JSON.parse(piped.stdout)).toMatchObject({ live_version: 3, phase: 'Ready' });
    expect(piped.stdout).not.toContain(PIPED);
    expect(await greeting()).toBe(PIPED);

    const unset = await runCli(['env', 'unset', 'envy', 'EXTRA'], { env });
    expect(unset.code).toBe(0);
    expect(unset.stdout).toContain('unset EXTRA on envy: version 4 serves');
    expect((await runCli(['env', 'ls', 'envy'], { env })).stdout.trim()).toBe('GREETING');

    const redeploy = await runCli(['deploy', dir], { env });
    expect(redeploy.code).toBe(0);
    expect(await greeting()).toBe(PIPED);
  });

  it('says what is wrong: an unknown name, a pair without =, nothing to set', async () => {
    const missing = await runCli(['env', 'unset', 'envy', 'NOPE'], { env });
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain('slipway: bad_request: env.unset[0] NOPE is not set');
    const reserved = await runCli(['env', 'set', 'envy', 'PORT=1'], { env });
    // Refused by the server's rule before anything is sent: a usage error.
    expect(reserved.code).toBe(2);
    expect(reserved.stderr).toContain('env variable "PORT": PORT is set by Slipway');
    const pair = await runCli(['env', 'set', 'envy', 'GREETING'], { env });
    expect(pair.code).toBe(2);
    expect(pair.stderr).toContain('GREETING is not KEY=VALUE');
    const none = await runCli(['env', 'set', 'envy'], { env });
    expect(none.code).toBe(2);
    const gone = await runCli(['env', 'ls', 'nothing-here'], { env });
    expect(gone.code).toBe(1);
    expect(gone.stderr).toContain('not_found');
  });

  it('whoami names the user, role and server; without a key it is exit 3', async () => {
    const me = await runCli(['whoami'], { env });
    expect(me.code).toBe(0);
    expect(me.stdout.split('\n')[0]).toBe(`apikey-dev (user) on ${server.baseURL}`);
    const json = await runCli(['whoami', '--json'], { env });
    expect(JSON.parse(json.stdout)).toMatchObject({
      url: server.baseURL,
      user_id: 'apikey-dev',
      mode: 'apikey',
    });
    const anonymous = await runCli(['whoami'], {
      env: { SLIPWAY_URL: server.baseURL, SLIPWAY_TOKEN: undefined },
    });
    expect(anonymous.code).toBe(3);
    const wrong = await runCli(['whoami'], { env: { ...env, SLIPWAY_TOKEN: 'not-a-key' } });
    expect(wrong.code).toBe(3);
  });
});
