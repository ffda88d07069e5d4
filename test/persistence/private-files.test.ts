import { spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';

const NOBODY = 65534;
const MODULE = new URL('../../src/persistence/private-files.ts', import.meta.url).pathname;
const dirs: string[] = [];

/** Runs ensurePrivateDir(dir) as another user, the way a non-root pod meets its volume's root. */
function ensureAs(uid: number, dir: string) {
  const script = `import { ensurePrivateDir } from ${JSON.stringify(MODULE)};
ensurePrivateDir(${JSON.stringify(dir)}, (level, msg, extra) => console.log(JSON.stringify({ level, msg, extra })));`;
  return spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
    uid,
    gid: uid,
    encoding: 'utf8',
    cwd: process.cwd(),
  });
}

afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

describe('ensurePrivateDir', () => {
  // As root (CI is), so that the run can be another user's.
  it("starts in a data dir another account owns (a volume's root), saying it cannot tighten it", () => {
    const dir = mkdtempSync(join(tmpdir(), 'slipway-volume-'));
    dirs.push(dir);
    chmodSync(dir, 0o777);
    const run = ensureAs(NOBODY, dir);
    expect(run.stderr).toBe('');
    expect(run.status).toBe(0);
    expect(JSON.parse(run.stdout.trim())).toMatchObject({
      level: 'warn',
      msg: 'cannot tighten permissions: another account owns this; its contents stay private',
      extra: { path: dir, mode: '0777' },
    });
    expect(statSync(dir).mode & 0o777).toBe(0o777);
  });

  it('tightens a dir it owns', () => {
    const dir = mkdtempSync(join(tmpdir(), 'slipway-own-'));
    dirs.push(dir);
    chmodSync(dir, 0o755);
    const run = ensureAs(process.getuid?.() ?? 0, dir);
    expect(run.status).toBe(0);
    expect(statSync(dir).mode & 0o777).toBe(0o700);
  });
});
