/** Versions, rollback, suspend/resume and rm through the CLI, against the real server. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fetchApp } from '../support/deploy.js';
import { call, type TestServer } from '../support/server.js';
import { appFiles, folderWith, removeFolders, runCli, startCliServer } from './run-cli.js';

const KEY = 'cli-history-key-0123456789abcdef';

describe('slipway versions, rollback, suspend, resume, rm', () => {
  let server: TestServer;
  let env: Record<string, string>;
  let url: string;

  beforeAll(async () => {
    ({ server, env } = await startCliServer(KEY));
    for (const label of ['first', 'second']) {
      const run = await runCli(['deploy', folderWith('hist', appFiles(label)), '--json'], { env });
      expect(run.code).toBe(0);
      url = String((JSON.parse(run.stdout) as { url: string }).url);
    }
  });
  afterAll(async () => {
    removeFolders();
    await server.stop();
  });

  it('rolls back to version 1 as a new version 3, and the URL serves version 1 again', async () => {
    expect((await fetchApp(url)).body).toBe('second\n');
    const run = await runCli(['rollback', 'hist', '1'], { env });
    expect(run.code).toBe(0);
    expect(run.stdout).toContain('rolled hist back to version 1, now serving as version 3');
    expect((await fetchApp(url)).body).toBe('first\n');

    const versions = await runCli(['versions', 'hist', '--json'], { env });
    const items = (JSON.parse(versions.stdout) as { items: Record<string, unknown>[] }).items;
    expect(items.map((v) => v.version)).toEqual([3, 2, 1]);
    expect(items[0]).toMatchObject({ rolled_back_from: 1, live: true });
    const human = await runCli(['versions', 'hist'], { env });
    expect(human.stdout).toMatch(/^3\*\s+Ready .*rollback of 1$/m);
  });

  it('refuses a version that is not a number (2) and one the app never had (1)', async () => {
    const usage = await runCli(['rollback', 'hist', 'latest'], { env });
    expect(usage.code).toBe(2);
    const unknown = await runCli(['rollback', 'hist', '99'], { env });
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('slipway: unknown_version: ');
  });

  it('suspends and resumes', async () => {
    const suspended = await runCli(['suspend', 'hist', '--json'], { env });
    expect(JSON.parse(suspended.stdout)).toMatchObject({ phase: 'Suspended' });
    const resumed = await runCli(['resume', 'hist'], { env });
    expect(resumed.code).toBe(0);
    expect(resumed.stdout).not.toContain('Suspended');
    expect((await fetchApp(url)).body).toBe('first\n');
  });

  it('rm asks for --yes off a terminal, then deletes', async () => {
    const refused = await runCli(['rm', 'hist'], { env });
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('pass --yes');
    expect((await call(server.baseURL, '/v1/apps/hist', { token: KEY })).status).toBe(200);

    const removed = await runCli(['rm', 'hist', '--yes', '--json'], { env });
    expect(JSON.parse(removed.stdout)).toEqual({ app_id: 'hist', deleted: true });
    expect((await call(server.baseURL, '/v1/apps/hist', { token: KEY })).status).toBe(404);
    const status = await runCli(['status', 'hist'], { env });
    expect(status.code).toBe(1);
    expect(status.stderr).toContain('slipway: not_found: ');
  });
});
