// `node test/support/ci-summary.mjs DIR NAME:KIND...`: the counts of every suite .ci/run ran, one
// line per suite, then their sum as the last line (`N passed, N failed`, `, N skipped` if any).
// For each NAME, DIR holds NAME.exit (the suite's exit status, absent if it never finished) and
// its report: NAME.json for KIND vitest, NAME.xml for KIND junit, none for KIND step. Exits 1
// when anything failed.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { formatCounts, suiteCounts, total } from './ci-counts.mjs';

const REPORT_FILE = { vitest: '.json', junit: '.xml' };

const [dir, ...suites] = process.argv.slice(2);
if (dir === undefined || suites.length === 0) {
  console.error('usage: node test/support/ci-summary.mjs DIR NAME:KIND...');
  process.exit(2);
}

const readIfThere = (path) => (existsSync(path) ? readFileSync(path, 'utf8') : undefined);

const counts = suites.map((suite) => {
  const [name, kind] = suite.split(':');
  if (kind !== 'step' && !(kind in REPORT_FILE)) {
    throw new Error(`${suite}: the kind is one of step, vitest, junit`);
  }
  const exitText = readIfThere(join(dir, `${name}.exit`));
  const exitCode = exitText === undefined ? undefined : Number(exitText.trim());
  const report = kind === 'step' ? undefined : readIfThere(join(dir, name + REPORT_FILE[kind]));
  const result = suiteCounts(kind, report, exitCode);
  console.log(`${name}: ${formatCounts(result)}${result.note ? ` (${result.note})` : ''}`);
  return result;
});

const sum = total(counts);
console.log(formatCounts(sum));
process.exit(sum.failed > 0 ? 1 : 0);
