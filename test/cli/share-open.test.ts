/**
 * Issue 29: `share create --password-stdin` keeps the password off the command line; `open` says
 * "opened" only when a browser was opened, and prints the URL when none can be (no display).
 */
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, type TestServer } from '../support/server.js';
import { appFiles, folderWith, removeFolders, runCli, startCliServer } from './run-cli.js';
import { runOnPty } from './run-on-pty.js';

const KEY = 'cli-share-open-key-0123456789abcdef';

describe('share create --password-stdin and open', () => {
  let server: TestServer;
  let env: Record<string, string>;
  let url: string;
  let bin: string;

  beforeAll(async () => {
    ({ server, env } = await startCliServer(KEY));
    const run = await runCli(['deploy', folderWith('opened', appFiles('opened')), '--json'], {
      env,
    });
    expect(run.code).toBe(0);
    url = String((JSON.parse(run.stdout) as { url: string }).url);
    bin = mkdtempSync(join(tmpdir(), 'slipway-fake-opener-'));
  }, 90_000);
  afterAll(async () => {
    removeFolders();
    rmSync(bin, { recursive: true, force: true });
    await server.stop();
  }, 90_000);

  /** An `xdg-open` first on PATH that writes the URL it got to `marker` and exits `code`. */
  const fakeOpener = (code: number): { PATH: string; marker: string } => {
    const dir = mkdtempSync(join(bin, 'bin-'));
    const marker = join(dir, 'opened-url');
    writeFileSync(
      join(dir, 'xdg-open'),
      `#!/bin/sh\nprintf '%s' "$1" > '${marker}'\nexit ${code}\n`,
    );
    chmodSync(join(dir, 'xdg-open'), 0o755);
    return { PATH: `${dir}:${process.env.PATH ?? ''}`, marker };
  };

  it('--password-stdin reads the password from stdin, without its newline', async () => {
    const run = await runCli(['share', 'create', 'opened', '--password-stdin', '--json'], {
      env,
      input: 'piped pass phrase\n',
    });
    expect(run.code).toBe(0);
    const link = JSON.parse(run.stdout) as { token: string; has_password: boolean };
    expect(link.has_password).toBe(true);
    const share = `/api/share/${link.token}`;
    const post = (password: string) =>
      call(server.baseURL, share, { method: 'POST', json: { password } });
    expect((await post('piped pass phrase\n')).status).toBe(401);
    expect((await post('piped pass phrase')).status).toBe(200);
  }, 90_000);

  it('--password-stdin refuses an empty password and --password beside it', async () => {
    const empty = await runCli(['share', 'create', 'opened', '--password-stdin'], {
      env,
      input: '\n',
    });
    expect(empty.code).toBe(2);
    expect(empty.stderr).toContain('the password from --password-stdin is empty');
    const both = await runCli(
      ['share', 'create', 'opened', '--password', 'x', '--password-stdin'],
      { env, input: 'y\n' },
    );
    expect(both.code).toBe(2);
    expect(both.stderr).toContain('next: pass one of them');
    const list = await runCli(['share', 'ls', 'opened', '--json'], { env });
    expect((JSON.parse(list.stdout) as { total: number }).total).toBe(1);
  }, 90_000);

  it('open on a terminal without a display prints the URL and says why, never "opened"', async () => {
    const opener = fakeOpener(0);
    const run = runOnPty(['open', 'opened'], {
      ...env,
      PATH: opener.PATH,
      DISPLAY: undefined,
      WAYLAND_DISPLAY: undefined,
    });
    expect(await run.exited).toBe(0);
    expect(run.screen).toContain('cannot open a browser here: no display');
    expect(run.screen.trimEnd().split('\n').at(-1)).toBe(url);
    expect(run.screen).not.toContain('opened http');
    expect(existsSync(opener.marker)).toBe(false);
  }, 90_000);

  it('open with a display says "opened" only when the opener succeeded', async () => {
    const failing = fakeOpener(3);
    const failed = runOnPty(['open', 'opened'], { ...env, PATH: failing.PATH, DISPLAY: ':99' });
    expect(await failed.exited).toBe(0);
    expect(failed.screen).toContain('cannot open a browser here: xdg-open exited with code 3');
    expect(failed.screen.trimEnd().split('\n').at(-1)).toBe(url);
    expect(readFileSync(failing.marker, 'utf8')).toBe(url);

    const working = fakeOpener(0);
    const opened = runOnPty(['open', 'opened'], { ...env, PATH: working.PATH, DISPLAY: ':99' });
    expect(await opened.exited).toBe(0);
    expect(opened.screen.trimEnd()).toBe(`opened ${url}`);
    expect(readFileSync(working.marker, 'utf8')).toBe(url);
  }, 90_000);
});
