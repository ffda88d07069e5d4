// .ci/run's counting (.ci/summary.sh with test/support/ci-summary.mjs), driven the way .ci/run
// drives it: suites run through `step`, a real vitest run writing its JSON report, a failing
// command, a suite that never runs, a run that dies early. The last line is what CI is judged by.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const ROOT = new URL('../..', import.meta.url).pathname;
const VITEST = join(ROOT, 'node_modules/.bin/vitest');

// Two passing tests and a failing one, for a vitest run of their own (globals: no imports, so
// they run from a directory outside the project).
const SAMPLE_TESTS = `
test('adds', () => { expect(1 + 1).toBe(2); });
test('compares', () => { expect('a' < 'b').toBe(true); });
test('fails', () => { expect(1).toBe(2); });
`;
const JUNIT = `<?xml version="1.0" ?>
<testsuites><testsuite name="schemathesis" tests="2">
<testcase name="GET /healthz"/>
<testcase name="POST /v1/deploy"><failure type="failure" message="500"/></testcase>
</testsuite></testsuites>
`;

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'ci-summary-'));
  writeFileSync(join(dir, 'schemathesis.xml'), JUNIT);
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A vitest run of the given tests in a directory of their own, as a `step` command. */
function vitestStep(name: string, tests: string): string {
  const root = mkdtempSync(join(dir, `${name}-`));
  writeFileSync(join(root, 'sample.test.js'), tests);
  return `step ${name} ${VITEST} run --root ${root} --globals \\
    --reporter=default --reporter=json --outputFile="$reports/${name}.json"`;
}

/** Runs a script in .ci/run's setting; resolves with its exit status and output lines. */
function ciScript(suites: string, body: string): Promise<{ status: number; lines: string[] }> {
  const script = `set -euo pipefail\nsuites=(${suites})\nsource .ci/summary.sh\n${body}\n`;
  return new Promise((resolve, reject) => {
    const child = spawn('bash', ['-c', script], {
      cwd: ROOT,
      env: { ...process.env, NO_COLOR: '1' },
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

describe('.ci/run summary', () => {
  it('sums every suite into the last line, counting a failing step, a failing test and a suite that never ran', async () => {
    const { status, lines } = await ciScript(
      'typecheck:step lint:step vitest:vitest schemathesis:junit k8s:vitest',
      [
        'step typecheck true',
        'step lint false',
        vitestStep('vitest', SAMPLE_TESTS),
        `step schemathesis cp ${join(dir, 'schemathesis.xml')} "$reports/schemathesis.xml"`,
      ].join('\n'),
    );
    expect(lines.slice(-6)).toEqual([
      'typecheck: 1 passed, 0 failed',
      'lint: 0 passed, 1 failed (exit status 1)',
      'vitest: 2 passed, 1 failed',
      'schemathesis: 1 passed, 1 failed',
      'k8s: 0 passed, 1 failed (no report)',
      '4 passed, 4 failed',
    ]);
    expect(status).not.toBe(0);
  }, 60_000);

  it('exits 0 when everything passed', async () => {
    const passing = SAMPLE_TESTS.replace(/^test\('fails'.*$/m, '');
    const { status, lines } = await ciScript(
      'lint:step vitest:vitest',
      ['step lint true', vitestStep('vitest', passing)].join('\n'),
    );
    expect(lines.at(-1)).toBe('3 passed, 0 failed');
    expect(status).toBe(0);
  }, 60_000);

  it('still prints the counts when the run dies before its suites, every suite failed', async () => {
    const { status, lines } = await ciScript(
      'typecheck:step vitest:vitest',
      'echo "npm ci: failed" && false\nstep typecheck true',
    );
    expect(lines.at(-1)).toBe('0 passed, 2 failed');
    expect(lines).not.toContain('typecheck: 1 passed, 0 failed');
    expect(status).toBe(1);
  });
});
