// `npm run lint:circles` must count import circles made only of type imports, which a type
// checker erases but a reader still has to untangle: madge runs here, with the repository's
// config (package.json's `madge` key, read from the working directory), on two small circles.
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';

const ROOT = new URL('../..', import.meta.url).pathname;
const MADGE = join(ROOT, 'node_modules/.bin/madge');

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'circles-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

function circles(): Promise<{ failed: boolean; output: string }> {
  return new Promise((resolve) => {
    execFile(
      MADGE,
      ['--circular', '--no-color', '--no-spinner', '--extensions', 'ts', dir],
      { cwd: ROOT },
      (error, stdout, stderr) => resolve({ failed: error !== null, output: stdout + stderr }),
    );
  });
}

describe('lint:circles', () => {
  it('finds a circle of `import type` statements', async () => {
    writeFileSync(join(dir, 'a.ts'), "import type { B } from './b.js';\nexport type A = B[];\n");
    writeFileSync(join(dir, 'b.ts'), "import type { A } from './a.js';\nexport type B = A[];\n");
    const { failed, output } = await circles();
    expect(output).toContain('a.ts > b.ts');
    expect(failed).toBe(true);
  });

  it('finds a circle through an `import()` type', async () => {
    writeFileSync(join(dir, 'c.ts'), "export type C = import('./d.js').D[];\n");
    writeFileSync(join(dir, 'd.ts'), "import type { C } from './c.js';\nexport type D = C[];\n");
    const { failed, output } = await circles();
    expect(output).toContain('c.ts > d.ts');
    expect(failed).toBe(true);
  });

  it('passes files without a circle', async () => {
    writeFileSync(join(dir, 'e.ts'), "import type { F } from './f.js';\nexport type E = F[];\n");
    writeFileSync(join(dir, 'f.ts'), 'export type F = string;\n');
    const { failed, output } = await circles();
    expect(output).toContain('No circular dependency found');
    expect(failed).toBe(false);
  });
});
