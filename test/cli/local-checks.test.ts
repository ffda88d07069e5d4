/**
 * Issue 29: `slipway deploy` refuses a bad name or env by the server's own rules before anything
 * is packed or sent, in the CLI's words; every error ends with a `next:` line that fits it.
 */
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { TestServer } from '../support/server.js';
import { appFiles, folderWith, removeFolders, runCli, startCliServer } from './run-cli.js';

const KEY = 'cli-checks-key-0123456789abcdef';

describe('slipway deploy checks its input locally', () => {
  let server: TestServer;
  let env: Record<string, string>;
  let dir: string;
  /** Every request the server received, as `METHOD path`. */
  const received: string[] = [];

  beforeAll(async () => {
    ({ server, env } = await startCliServer(KEY));
    server.app.server.on('request', (req: IncomingMessage) =>
      received.push(`${req.method} ${req.url}`),
    );
    dir = folderWith('checked', appFiles('checked'));
  }, 120_000);
  beforeEach(() => {
    received.length = 0;
  });
  afterAll(async () => {
    removeFolders();
    await server.stop();
  }, 120_000);

  const refused = async (args: string[]): Promise<string> => {
    const run = await runCli(['deploy', dir, ...args], { env });
    expect(run.code).toBe(2);
    expect(run.stdout).toBe('');
    // Nothing packed, nothing sent.
    expect(run.stderr).not.toContain('packed ');
    expect(received).toEqual([]);
    expect(run.stderr).not.toContain('metadata.');
    const lines = run.stderr.trimEnd().split('\n');
    expect(lines.at(-1)).toMatch(/^next: /);
    return run.stderr;
  };

  it('refuses a bad --name with the server rule, before any request', async () => {
    const upper = await refused(['--name', 'My_App']);
    expect(upper).toContain(
      'slipway: usage: the app name "My_App" must be lowercase letters, digits and "-", starting and ending with a letter or digit',
    );
    expect(upper).toContain('next: pass --name with a name such as my-app');
    const long = await refused(['--name', 'a'.repeat(64)]);
    expect(long).toContain('must be at most 63 characters');
  }, 120_000);

  it('refuses a bad env name, a reserved one, and says where it came from, never the value', async () => {
    const digit = await refused(['--env', '1BAD=s3cr3t-value']);
    expect(digit).toContain(
      'slipway: usage: env variable "1BAD" (from --env): must be a variable name: letters, digits and _, not starting with a digit',
    );
    expect(digit).toContain('next: fix the variable in --env or --env-file and deploy again');
    expect(digit).not.toContain('s3cr3t');

    const file = join(dir, '..', 'bad.env');
    writeFileSync(file, 'GOOD=1\nPORT=s3cr3t-port\n');
    const reserved = await refused(['--env-file', file]);
    expect(reserved).toContain(
      `env variable "PORT" (from --env-file ${file}): PORT is set by Slipway and cannot be overridden`,
    );
    expect(reserved).not.toContain('s3cr3t');
  }, 120_000);

  it('refuses a bad --egress host and a bad --ttl the same way', async () => {
    const egress = await refused(['--egress', 'https://example.org/path']);
    expect(egress).toContain(
      'slipway: usage: --egress https://example.org/path: must be a host name',
    );
    const ttl = await refused(['--ttl', 'forever']);
    expect(ttl).toContain('slipway: usage: --ttl: "forever" is not a duration');
  }, 120_000);

  it('env set and env unset refuse a bad name the same way, before any request', async () => {
    const set = await runCli(['env', 'set', 'checked', 'GOOD=1', 'SLIPWAY_X=s3cr3t'], { env });
    expect(set.code).toBe(2);
    expect(set.stderr).toContain(
      'slipway: usage: env variable "SLIPWAY_X": SLIPWAY_X is set by Slipway and cannot be overridden',
    );
    expect(set.stderr).not.toContain('s3cr3t');
    expect(set.stderr.trimEnd().split('\n').at(-1)).toBe(
      'next: fix the name and run slipway env set again',
    );
    const unset = await runCli(['env', 'unset', 'checked', 'my-var'], { env });
    expect(unset.code).toBe(2);
    expect(unset.stderr).toContain(
      'slipway: usage: env variable "my-var": must be a variable name',
    );
    expect(unset.stderr).not.toContain('env.unset');
    expect(received).toEqual([]);
  }, 120_000);

  it('a good deploy still goes through (the checks refuse only what the server would)', async () => {
    const run = await runCli(['deploy', dir, '--env', 'GREETING=hi', '--ttl', '1h'], { env });
    expect(run.code).toBe(0);
    expect(received.some((r) => r.startsWith('POST /v1/deploy'))).toBe(true);
  }, 120_000);
});

describe('every error ends with a next step that fits it', () => {
  let server: TestServer;
  let env: Record<string, string>;

  beforeAll(async () => {
    ({ server, env } = await startCliServer(KEY));
    const run = await runCli(['deploy', folderWith('talker', appFiles('talker'))], { env });
    expect(run.code).toBe(0);
  }, 120_000);
  afterAll(async () => {
    removeFolders();
    await server.stop();
  }, 120_000);

  const lastLine = (stderr: string): string => stderr.trimEnd().split('\n').at(-1) ?? '';

  it('login --url …/v1 says to drop the path', async () => {
    const run = await runCli(['login', '--url', `${server.baseURL}/v1`, '--token', KEY], {
      env: { SLIPWAY_URL: undefined, SLIPWAY_TOKEN: undefined },
    });
    expect(run.code).toBe(1);
    expect(run.stderr).toContain(`no Slipway API at ${server.baseURL}/v1; nothing was saved`);
    expect(lastLine(run.stderr)).toBe(
      `next: give the server's address without /v1: slipway login --url ${server.baseURL}`,
    );
  }, 120_000);

  it('login on a URL that answers a web page, not the API, says to check the URL', async () => {
    const page = createServer((_req, res) => res.end('<html>not slipway</html>'));
    await new Promise<void>((resolve) => page.listen(0, '127.0.0.1', resolve));
    const other = `http://127.0.0.1:${(page.address() as AddressInfo).port}`;
    try {
      const run = await runCli(['login', '--url', other, '--token', KEY], {
        env: { SLIPWAY_URL: undefined, SLIPWAY_TOKEN: undefined },
      });
      expect(run.code).toBe(1);
      expect(run.stderr).toContain(`slipway: not_found: no Slipway API at ${other}`);
      expect(lastLine(run.stderr)).toBe(
        "next: check --url: it is the address the server's dashboard opens at",
      );
    } finally {
      page.close();
    }
  }, 120_000);

  it("the server's refusals each end with a next step", async () => {
    const cases: [string[], string][] = [
      [['status', 'nope'], 'next: list your apps with slipway apps'],
      [
        ['rollback', 'talker', '9'],
        'next: list the versions you can go back to with slipway versions <app>',
      ],
      [
        ['share', 'create', 'talker', '--expires', '7d'],
        'next: pass --expires as a duration such as 30m or 24h',
      ],
      [
        ['share', 'revoke', 'no-such-token'],
        'next: list the links that work with slipway share ls <app>',
      ],
      [
        ['env', 'unset', 'talker', 'NEVER_SET'],
        'next: fix what the message names and run the command again',
      ],
    ];
    for (const [args, next] of cases) {
      const run = await runCli(args, { env });
      expect({ args, code: run.code }).toEqual({ args, code: 1 });
      expect({ args, last: lastLine(run.stderr) }).toEqual({
        args,
        last: expect.stringContaining(next) as string,
      });
    }
  }, 120_000);
});
