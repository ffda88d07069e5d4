// The counts CI sums into its last line (test/support/ci-counts.mjs), over sample reports in the
// shapes vitest 4's JSON reporter and Schemathesis' JUnit report write, and one Schemathesis wrote.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  formatCounts,
  junitCounts,
  suiteCounts,
  total,
  vitestCounts,
} from '../support/ci-counts.mjs';

const file = (status: string, tests: string[]) => ({
  name: '/repo/test/x.test.ts',
  status,
  message: '',
  assertionResults: tests.map((s) => ({ status: s, title: s, failureMessages: [] })),
});

// A run of three files: one with a passing, a failing, a skipped and a todo test; one that threw
// at import (no tests); one whose beforeAll failed (its test skipped).
const VITEST_REPORT = JSON.stringify({
  numTotalTestSuites: 3,
  numFailedTestSuites: 3,
  numTotalTests: 5,
  numPassedTests: 1,
  numFailedTests: 1,
  numPendingTests: 2,
  numTodoTests: 1,
  success: false,
  testResults: [
    file('failed', ['passed', 'failed', 'skipped', 'todo']),
    file('failed', []),
    file('failed', ['skipped']),
  ],
});

const VITEST_GREEN = JSON.stringify({
  numPassedTests: 2,
  numFailedTests: 0,
  numPendingTests: 0,
  numTodoTests: 0,
  success: true,
  testResults: [file('passed', ['passed', 'passed'])],
});

// In the shape of Schemathesis' JUnit report: one case per operation, several <failure>s in one
// case, an <error>, a <skipped>, attribute values holding escaped markup and a raw '>'.
const JUNIT_REPORT = `<?xml version="1.0" ?>
<testsuites disabled="0" errors="1" failures="3" tests="6" time="4.2">
\t<testsuite disabled="0" errors="1" failures="3" hostname="ci" name="schemathesis" skipped="1" tests="6" time="4.2">
\t\t<testcase name="GET /healthz" time="0.1"/>
\t\t<testcase name="GET /v1/apps" time="0.5">
\t\t</testcase>
\t\t<testcase name="POST /v1/deploy" time="1.3">
\t\t\t<failure type="failure" message="1. Test Case ID: a&#10;&lt;testcase name=&quot;x&quot;/&gt; -> 500"/>
\t\t\t<failure type="failure" message="2. Test Case ID: b">body &lt;html&gt;</failure>
\t\t</testcase>
\t\t<testcase name="DELETE /v1/apps/{name}" time="0.2">
\t\t\t<error type="error">Schema error</error>
\t\t</testcase>
\t\t<testcase name="GET /mcp" time="0.0">
\t\t\t<skipped type="skipped">No examples</skipped>
\t\t</testcase>
\t\t<testcase name="Stateful tests" time="2.1">
\t\t\t<skipped type="skipped">partly</skipped>
\t\t\t<failure type="failure" message="stateful"/>
\t\t</testcase>
\t</testsuite>
</testsuites>
`;

describe('vitestCounts', () => {
  it('counts tests, a file failing outside its tests as one failure, skips and todos as skipped', () => {
    expect(vitestCounts(VITEST_REPORT)).toEqual({ passed: 1, failed: 3, skipped: 3 });
    expect(vitestCounts(VITEST_GREEN)).toEqual({ passed: 2, failed: 0, skipped: 0 });
  });

  it('refuses what is not a vitest report', () => {
    expect(() => vitestCounts('{"tests": 3}')).toThrow(/not a vitest JSON report/);
    expect(() => vitestCounts('{"numPassedTests": 1, "testRes')).toThrow(SyntaxError);
  });
});

describe('junitCounts', () => {
  it('counts each test case once: failed with a failure or error, else skipped, else passed', () => {
    expect(junitCounts(JUNIT_REPORT)).toEqual({ passed: 2, failed: 3, skipped: 1 });
  });

  it('reads the report Schemathesis 4.32.5 (what test/contract/schemathesis.sh installs) writes', () => {
    // Written by `st run --report junit` against a stand-in server: two operations passing, one
    // answering a status code its spec does not document.
    const report = readFileSync(
      new URL('fixtures/schemathesis-4.32.5-junit.xml', import.meta.url),
      'utf8',
    );
    expect(junitCounts(report)).toEqual({ passed: 2, failed: 1, skipped: 0 });
  });

  it('refuses an empty file, one cut off inside a test case, and one with no test suite', () => {
    expect(() => junitCounts('')).toThrow(/not a JUnit XML report/);
    expect(() => junitCounts(JUNIT_REPORT.slice(0, JUNIT_REPORT.indexOf('</testcase>')))).toThrow(
      /not a JUnit XML report/,
    );
    expect(() => junitCounts('<testsuites></testsuites>')).toThrow(/not a JUnit XML report/);
  });
});

describe('suiteCounts', () => {
  it('counts a step (typecheck, lint) as one test, passed only when it exited 0', () => {
    expect(suiteCounts('step', undefined, 0)).toEqual({
      passed: 1,
      failed: 0,
      skipped: 0,
      note: '',
    });
    expect(suiteCounts('step', undefined, 2)).toMatchObject({ failed: 1, note: 'exit status 2' });
    expect(suiteCounts('step', undefined, undefined)).toMatchObject({
      failed: 1,
      note: 'did not finish',
    });
  });

  it('counts a missing or unreadable report as one failure', () => {
    expect(suiteCounts('vitest', undefined, 1)).toEqual({
      passed: 0,
      failed: 1,
      skipped: 0,
      note: 'no report',
    });
    expect(suiteCounts('junit', '', 1)).toMatchObject({ passed: 0, failed: 1 });
    expect(suiteCounts('junit', '', 1).note).toMatch(/^unreadable report/);
  });

  it("adds one failure when a suite exited non-zero and its report shows none, else the report's counts", () => {
    expect(suiteCounts('vitest', VITEST_GREEN, 1)).toMatchObject({
      passed: 2,
      failed: 1,
      note: 'exit status 1',
    });
    expect(suiteCounts('vitest', VITEST_GREEN, 0)).toMatchObject({ passed: 2, failed: 0 });
    expect(suiteCounts('junit', JUNIT_REPORT, 1)).toMatchObject({ failed: 3, note: '' });
  });
});

describe('total and formatCounts', () => {
  it('sums suites into `N passed, N failed`, with `, N skipped` only when some were', () => {
    const sum = total([
      { passed: 1, failed: 0, skipped: 0 },
      { passed: 40, failed: 2, skipped: 3 },
    ]);
    expect(formatCounts(sum)).toBe('41 passed, 2 failed, 3 skipped');
    expect(formatCounts({ passed: 7, failed: 0, skipped: 0 })).toBe('7 passed, 0 failed');
    expect(formatCounts(total([]))).toBe('0 passed, 0 failed');
  });
});
