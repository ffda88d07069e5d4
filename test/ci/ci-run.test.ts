// .ci/run itself, in a copy of its files, with stand-ins for apt-get, npm, npx and the test
// cluster's build that write reports where .ci/run asks for them: every suite runs after one
// fails, each report is found, and the last line is the sum. (The real suites are far too heavy
// to run from a test.)
import { spawn } from 'node:child_process';
import {
  chmodSync,
  cpSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';

const ROOT = new URL('../..', import.meta.url).pathname;
const FILES = [
  '.ci/run',
  '.ci/summary.sh',
  'test/support/ci-counts.mjs',
  'test/support/ci-summary.mjs',
];

// Each stand-in logs its call, then acts as told by the environment: NPM_CI_STATUS, LINT_STATUS,
// API_LINT_STATUS.
const STANDINS: Record<string, string> = {
  'apt-get': 'echo "apt-get $*" >>"$CALLS"',
  npm: `echo "npm $*" >>"$CALLS"
case "$*" in
  ci) exit "\${NPM_CI_STATUS:-0}" ;;
  "run lint") exit "\${LINT_STATUS:-0}" ;;
  "run lint:api") exit "\${API_LINT_STATUS:-0}" ;;
  "run test:api")
    printf '<testsuites><testsuite name="schemathesis"><testcase name="GET /healthz"/><testcase name="GET /v1/apps"/></testsuite></testsuites>' >"$ST_JUNIT_PATH" ;;
esac`,
  npx: `echo "npx $*" >>"$CALLS"
for arg in "$@"; do case "$arg" in --outputFile=*) out="\${arg#--outputFile=}" ;; esac; done
passed=5; case "$*" in *--config*) passed=2 ;; esac
printf '{"numPassedTests":%s,"numFailedTests":0,"numPendingTests":1,"numTodoTests":0,"testResults":[]}' "$passed" >"$out"`,
};

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'ci-run-'));
  for (const file of FILES) cpSync(join(ROOT, file), join(dir, 'repo', file));
  mkdirSync(join(dir, 'repo/test/k8s'), { recursive: true });
  writeFileSync(join(dir, 'repo/test/k8s/build.sh'), 'echo "build.sh" >>"$CALLS"\n');
  // The network namespace of the k8s suites: logged, then what it wraps runs as it is.
  writeFileSync(join(dir, 'repo/test/k8s/netns.sh'), 'echo "netns.sh" >>"$CALLS"\nexec "$@"\n');
  // The LTS Node's run: logged, and a report where .ci/run asks for it.
  writeFileSync(
    join(dir, 'repo/.ci/lts-vitest.sh'),
    `echo "lts-vitest.sh $1" >>"$CALLS"
for arg in "$@"; do case "$arg" in --outputFile=*) out="\${arg#--outputFile=}" ;; esac; done
printf '{"numPassedTests":3,"numFailedTests":0,"numPendingTests":1,"numTodoTests":0,"testResults":[]}' >"$out"
`,
  );
  mkdirSync(join(dir, 'bin'));
  for (const [name, body] of Object.entries(STANDINS)) {
    writeFileSync(join(dir, 'bin', name), `#!/usr/bin/env bash\n${body}\n`);
    chmodSync(join(dir, 'bin', name), 0o755);
  }
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

function ciRun(env: Record<string, string>): Promise<{ status: number; lines: string[] }> {
  return new Promise((resolve, reject) => {
    const child = spawn('bash', [join(dir, 'repo/.ci/run')], {
      env: {
        ...process.env,
        ...env,
        CI: 'true',
        CALLS: join(dir, 'calls'),
        PATH: `${join(dir, 'bin')}:${process.env.PATH ?? ''}`,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (out += chunk.toString()));
    child.on('error', reject);
    child.on('close', (status) =>
      resolve({ status: status ?? -1, lines: out.trimEnd().split('\n') }),
    );
  });
}

const calls = () => readFileSync(join(dir, 'calls'), 'utf8').trimEnd().split('\n');

describe('.ci/run', () => {
  it('runs every suite after a failing one and ends with the counts of all of them', async () => {
    const { status, lines } = await ciRun({ LINT_STATUS: '1', API_LINT_STATUS: '2' });
    expect(calls().map((call) => call.split(' --')[0])).toEqual([
      'apt-get update -qq',
      'apt-get install -y -qq bubblewrap haproxy chromium mmdebstrap skopeo',
      'npm ci',
      'npm run typecheck',
      'npm run lint',
      'npm run lint:api',
      'npm run lint:circles',
      'npx vitest run',
      'npm run test:api',
      'build.sh',
      'netns.sh',
      'npx vitest run',
      'lts-vitest.sh run',
    ]);
    expect(lines.slice(-9)).toEqual([
      'typecheck: 1 passed, 0 failed',
      'lint: 0 passed, 1 failed (exit status 1)',
      'api-lint: 0 passed, 1 failed (exit status 2)',
      'circles: 1 passed, 0 failed',
      'vitest: 5 passed, 0 failed, 1 skipped',
      'schemathesis: 2 passed, 0 failed',
      'k8s: 2 passed, 0 failed, 1 skipped',
      'vitest-lts: 3 passed, 0 failed, 1 skipped',
      '14 passed, 2 failed, 3 skipped',
    ]);
    expect(status).not.toBe(0);
  });

  it('exits 0 when everything passed', async () => {
    const { status, lines } = await ciRun({});
    expect(lines.at(-1)).toBe('16 passed, 0 failed, 3 skipped');
    expect(status).toBe(0);
  });

  it('counts every suite as failed when the install fails, and runs none', async () => {
    const { status, lines } = await ciRun({ NPM_CI_STATUS: '1' });
    expect(calls().at(-1)).toBe('npm ci');
    expect(lines.at(-1)).toBe('0 passed, 8 failed');
    expect(status).not.toBe(0);
  });
});
