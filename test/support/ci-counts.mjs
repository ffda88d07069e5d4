// Test counts from the reports CI collects (.ci/run, summed by ci-summary.mjs). Plain JavaScript
// with no dependencies, so the summary still prints when `npm ci` itself failed.

/** Passed, failed and skipped tests in a vitest JSON report (`--reporter=json`). */
export function vitestCounts(json) {
  const report = JSON.parse(json);
  if (!Array.isArray(report.testResults) || typeof report.numPassedTests !== 'number') {
    throw new Error('not a vitest JSON report');
  }
  // A file that fails outside any test (an import error, a failing beforeAll) has no failed
  // test of its own, yet it failed: it counts as one.
  const brokenFiles = report.testResults.filter(
    (file) =>
      file.status === 'failed' && !file.assertionResults.some((test) => test.status === 'failed'),
  ).length;
  return {
    passed: report.numPassedTests,
    failed: report.numFailedTests + brokenFiles,
    skipped: report.numPendingTests + report.numTodoTests,
  };
}

// Any start or end tag, with quoted attribute values that may hold '>'. XML escapes '<' in text
// and attributes, so a '<' always starts a tag.
const TAG = /<(\/?)([A-Za-z][\w:.-]*)(?:[^>"']|"[^"]*"|'[^']*')*?(\/?)>/g;

/**
 * Passed, failed and skipped test cases in a JUnit XML report (Schemathesis' `--report junit`):
 * a case with a <failure> or <error> failed, else one with <skipped> was skipped, else it passed.
 */
export function junitCounts(xml) {
  const counts = { passed: 0, failed: 0, skipped: 0 };
  let suites = 0;
  let current = null;
  const close = () => {
    if (current === null) return;
    if (current.failed) counts.failed += 1;
    else if (current.skipped) counts.skipped += 1;
    else counts.passed += 1;
    current = null;
  };
  for (const [, end, name, selfClosing] of xml.matchAll(TAG)) {
    if (name === 'testsuite' && !end) suites += 1;
    if (name === 'testcase') {
      if (end) close();
      else {
        current = { failed: false, skipped: false };
        if (selfClosing) close();
      }
    } else if (current !== null && !end && (name === 'failure' || name === 'error')) {
      current.failed = true;
    } else if (current !== null && !end && name === 'skipped') {
      current.skipped = true;
    }
  }
  // Schemathesis opens its report file when it starts: an empty or cut-off file is no report.
  if (suites === 0 || current !== null) throw new Error('not a JUnit XML report');
  return counts;
}

const PARSERS = { vitest: vitestCounts, junit: junitCounts };

/**
 * One suite's counts and a note on anything counted beyond its report. kind is 'step' (a command
 * that is one test: typecheck, lint), 'vitest' or 'junit'; report is the report's text or
 * undefined when there is none; exitCode is undefined when the suite never finished.
 */
export function suiteCounts(kind, report, exitCode) {
  if (kind === 'step') {
    if (exitCode === 0) return { passed: 1, failed: 0, skipped: 0, note: '' };
    return { passed: 0, failed: 1, skipped: 0, note: exitNote(exitCode) };
  }
  if (report === undefined) return { passed: 0, failed: 1, skipped: 0, note: 'no report' };
  let counts;
  try {
    counts = PARSERS[kind](report);
  } catch (error) {
    return { passed: 0, failed: 1, skipped: 0, note: `unreadable report: ${error.message}` };
  }
  // A run can fail where no test sees it (an unhandled error, a server that never started): the
  // exit status still counts, as one failure.
  if (exitCode !== 0 && counts.failed === 0) {
    return { ...counts, failed: 1, note: exitNote(exitCode) };
  }
  return { ...counts, note: '' };
}

function exitNote(exitCode) {
  return exitCode === undefined ? 'did not finish' : `exit status ${exitCode}`;
}

/** The sum of several suites' counts. */
export function total(counts) {
  return counts.reduce(
    (sum, c) => ({
      passed: sum.passed + c.passed,
      failed: sum.failed + c.failed,
      skipped: sum.skipped + c.skipped,
    }),
    { passed: 0, failed: 0, skipped: 0 },
  );
}

/** `N passed, N failed`, then `, N skipped` when there are any: the line CI is judged by. */
export function formatCounts({ passed, failed, skipped }) {
  const line = `${passed} passed, ${failed} failed`;
  return skipped > 0 ? `${line}, ${skipped} skipped` : line;
}
