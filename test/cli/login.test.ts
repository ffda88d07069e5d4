/** Credentials: `login`/`logout`, the config file, env overrides and exit codes 2 and 3. */
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../support/server.js';
import { runCli } from './run-cli.js';

const KEY = 'cli-login-key-0123456789abcdef';

describe('slipway login and credentials', () => {
  let server: TestServer;

  beforeAll(async () => {
    server = await startTestServer({ auth: { apiKeys: [{ key: KEY, name: 'dev' }] } });
  });
  afterAll(() => server.stop());

  const noEnv = { SLIPWAY_URL: undefined, SLIPWAY_TOKEN: undefined };

  it('checks the key, then writes it to $XDG_CONFIG_HOME/slipway/config.json with mode 0600', async () => {
    const config = mkdtempSync(join(tmpdir(), 'slipway-cli-xdg-'));
    const env = { ...noEnv, XDG_CONFIG_HOME: config };
    const file = join(config, 'slipway', 'config.json');

    const refused = await runCli(['login', '--url', server.baseURL, '--token', 'wrong-key'], {
      env,
    });
    expect(refused.code).toBe(3);
    expect(refused.stderr).toContain('slipway: unauthenticated: invalid API key');
    expect(() => statSync(file)).toThrow();

    const run = await runCli(['login', '--url', `${server.baseURL}/`, '--token-stdin'], {
      env,
      input: `${KEY}\n`,
    });
    expect(run.code).toBe(0);
    expect(run.stdout).toContain(`logged in to ${server.baseURL} as apikey-dev`);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(statSync(join(config, 'slipway')).mode & 0o777).toBe(0o700);
    expect(JSON.parse(readFileSync(file, 'utf8'))).toEqual({ url: server.baseURL, token: KEY });

    // The saved login is what later commands use.
    const apps = await runCli(['apps', '--json'], { env });
    expect(apps.code).toBe(0);
    expect(JSON.parse(apps.stdout)).toEqual({ items: [], total: 0 });

    // SLIPWAY_TOKEN wins over the file.
    const overridden = await runCli(['apps'], { env: { ...env, SLIPWAY_TOKEN: 'env-wrong-key' } });
    expect(overridden.code).toBe(3);

    const out = await runCli(['logout'], { env });
    expect(out.code).toBe(0);
    expect(() => statSync(file)).toThrow();
    const after = await runCli(['apps'], { env });
    expect(after.code).toBe(3);
    expect(after.stderr).toContain('next: run slipway login');
    rmSync(config, { recursive: true, force: true });
  });

  it('a wrong key exits 3 with the server message and a next step, never a stack trace', async () => {
    const env = { SLIPWAY_URL: server.baseURL, SLIPWAY_TOKEN: 'not-the-key' };
    const human = await runCli(['apps'], { env });
    expect(human.code).toBe(3);
    expect(human.stdout).toBe('');
    expect(human.stderr).toContain('slipway: unauthenticated: invalid API key');
    expect(human.stderr).toContain('next: ');
    expect(human.stderr).not.toMatch(/\n\s+at /);

    const json = await runCli(['apps', '--json'], { env });
    expect(json.code).toBe(3);
    expect(json.stderr).toBe('');
    expect(JSON.parse(json.stdout)).toMatchObject({
      error: { code: 'unauthenticated', message: 'invalid API key', exit_code: 3 },
    });
  });

  it('an unreachable server exits 1; usage errors exit 2; help exits 0', async () => {
    const closed = await runCli(['apps'], {
      env: { SLIPWAY_URL: 'http://127.0.0.1:9', SLIPWAY_TOKEN: KEY },
    });
    expect(closed.code).toBe(1);
    expect(closed.stderr).toContain('slipway: unreachable: cannot reach http://127.0.0.1:9');

    const unknown = await runCli(['deploi'], { env: noEnv });
    expect(unknown.code).toBe(2);
    const missingArg = await runCli(['status', '--json'], { env: noEnv });
    expect(missingArg.code).toBe(2);
    expect(JSON.parse(missingArg.stdout)).toMatchObject({ error: { code: 'usage' } });

    const help = await runCli(['--help'], { env: noEnv });
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('Exit codes:');
  });
});
