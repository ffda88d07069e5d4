import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, renameSync, rmSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

/**
 * moto[server]'s venv, from the Python package index, built once into `$SLIPWAY_CACHE` (default
 * ~/.cache/slipway), as the Schemathesis run does. Apart from moto.ts, so that test/k8s/build.sh
 * can make it before the k8s suites run without a network (test/k8s/netns.sh), without loading
 * the S3 client.
 */
export const MOTO_VERSION = '5.2.5';

const run = promisify(execFile);

/** The venv's python, built on first use; concurrent test files race to a rename, one wins. */
export async function motoPython(): Promise<string> {
  const cache = process.env.SLIPWAY_CACHE ?? join(homedir(), '.cache', 'slipway');
  const venv = join(cache, `moto-${MOTO_VERSION}`);
  const python = join(venv, 'bin', 'python');
  if (existsSync(python)) return python;
  mkdirSync(cache, { recursive: true });
  // Built aside and renamed whole, so a half-built venv is never taken for a ready one. Run as
  // `python -m moto.server`, the venv needs no absolute paths in scripts and survives the rename.
  const building = `${venv}.building-${randomBytes(4).toString('hex')}`;
  try {
    await run('python3', ['-m', 'venv', building]);
    await run(join(building, 'bin', 'pip'), [
      'install',
      '--quiet',
      '--disable-pip-version-check',
      `moto[server]==${MOTO_VERSION}`,
    ]);
    try {
      renameSync(building, venv);
    } catch (err) {
      // Another test file's build won the race: its venv is as good as this one.
      if (!existsSync(python)) throw err;
    }
  } finally {
    rmSync(building, { recursive: true, force: true });
  }
  return python;
}
