// .ci/run runs the parts of `npm test` and `npm run test:k8s` one by one, so that one failing
// still lets the others run and be counted: these checks keep it running what developers run.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = new URL('../..', import.meta.url).pathname;
const ciRun = readFileSync(join(ROOT, '.ci/run'), 'utf8').replace(/\\\n\s*/g, '');
const scripts = (
  JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
    scripts: Record<string, string>;
  }
).scripts;

describe('.ci/run', () => {
  it.each(['test', 'test:k8s'])('runs every part of `npm run %s`', (name) => {
    const parts = (scripts[name] ?? '').split('&&').map((part) => part.trim());
    expect(parts.length).toBeGreaterThan(1);
    for (const part of parts) expect(ciRun).toContain(part);
  });

  it('counts exactly the suites it runs', () => {
    const declared = /^suites=\((.*)\)$/m.exec(ciRun)?.[1]?.split(' ') ?? [];
    const run = [...ciRun.matchAll(/^step (\S+) /gm)].map((m) => m[1]);
    expect(declared.map((suite) => suite.split(':')[0])).toEqual(run);
    expect(run).toEqual([
      'typecheck',
      'lint',
      'api-lint',
      'circles',
      'vitest',
      'schemathesis',
      'k8s',
      'vitest-lts',
    ]);
  });

  it('runs the whole node-router project on the LTS Node, not a choice of files', () => {
    const step = /^step vitest-lts (.*)$/m.exec(ciRun)?.[1] ?? '';
    expect(step).toMatch(/^bash \.ci\/lts-vitest\.sh run --project node-router /);
    expect(step.split(' ').filter((arg) => arg.startsWith('test/'))).toEqual([]);
  });
});
