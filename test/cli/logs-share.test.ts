/** `slipway logs -f` and `slipway share` against the real server. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fetchApp } from '../support/deploy.js';
import { call, type TestServer } from '../support/server.js';
import {
  appFiles,
  folderWith,
  removeFolders,
  runCli,
  startCli,
  startCliServer,
} from './run-cli.js';

const KEY = 'cli-logs-key-0123456789abcdef';

describe('slipway logs and share', () => {
  let server: TestServer;
  let env: Record<string, string>;
  let url: string;

  beforeAll(async () => {
    ({ server, env } = await startCliServer(KEY));
    const run = await runCli(['deploy', folderWith('talker', appFiles('talker')), '--json'], {
      env,
    });
    expect(run.code).toBe(0);
    url = String((JSON.parse(run.stdout) as { url: string }).url);
  });
  afterAll(async () => {
    removeFolders();
    await server.stop();
  });

  it('logs -f prints a line the app prints after the stream opened', async () => {
    const follow = startCli(['logs', 'talker', '-f'], env);
    try {
      await follow.waitFor('[slipway] serving version 1');
      await fetchApp(`${url}/log?msg=cli-follow-marker`);
      await follow.waitFor('cli-follow-marker');
      expect(follow.stdout).toMatch(/^\d{4}-\d\d-\d\dT[\d:.]+Z cli-follow-marker$/m);
    } finally {
      follow.child.kill();
    }
  });

  it('logs --json prints one JSON object per line, and --version filters', async () => {
    const run = await runCli(['logs', 'talker', '--json', '--version', '1'], { env });
    expect(run.code).toBe(0);
    const records = run.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { version: number; line: string });
    expect(records.some((r) => r.line === '[slipway] serving version 1')).toBe(true);
    expect(records.every((r) => r.version === 1)).toBe(true);
    const none = await runCli(['logs', 'talker', '--json', '--version', '7'], { env });
    expect(none.stdout).toBe('');
  });

  it('share create --password makes a link that needs the password; ls lists it; revoke ends it', async () => {
    const created = await runCli(
      ['share', 'create', 'talker', '--password', 'hunter22', '--expires', '1h', '--json'],
      { env },
    );
    expect(created.code).toBe(0);
    const link = JSON.parse(created.stdout) as { token: string; has_password: boolean };
    expect(link.has_password).toBe(true);
    const share = `/api/share/${link.token}`;
    expect((await call(server.baseURL, share)).status).toBe(401);
    const wrong = await call(server.baseURL, share, { method: 'POST', json: { password: 'nope' } });
    expect(wrong.status).toBe(401);
    const right = await call(server.baseURL, share, {
      method: 'POST',
      json: { password: 'hunter22' },
    });
    expect(right.status).toBe(200);
    expect(right.body).toMatchObject({ name: 'talker' });

    const listed = await runCli(['share', 'ls', 'talker'], { env });
    expect(listed.stdout).toContain(link.token);
    const revoked = await runCli(['share', 'revoke', link.token], { env });
    expect(revoked.code).toBe(0);
    expect((await call(server.baseURL, share)).status).toBe(404);
    const again = await runCli(['share', 'revoke', link.token], { env });
    expect(again.code).toBe(1);
  });

  it('a bad --expires is the server message, exit 1', async () => {
    const run = await runCli(['share', 'create', 'talker', '--expires', '7d'], { env });
    expect(run.code).toBe(1);
    expect(run.stderr).toContain('slipway: bad_expires_in: ');
  });

  it('open prints the URL when the machine has no opener', async () => {
    const run = await runCli(['open', 'talker'], { env: { ...env, PATH: '/nonexistent' } });
    expect(run.code).toBe(0);
    expect(run.stdout.trim()).toBe(url);
  });
});
