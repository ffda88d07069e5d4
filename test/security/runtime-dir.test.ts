import { spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { stopFrontDoor } from '../../src/front/front-door.js';

/**
 * Sandboxes never fall back to host uid 0: where the sandbox users could not reach their runtime
 * dir, `npm start` refuses with one line that says why and what to set.
 */
describe('a runtime dir the sandbox users cannot reach', () => {
  const home = mkdtempSync(join(tmpdir(), 'slipway-home-'));
  afterAll(async () => {
    // The refused start stops the front door it launched; under heavy load one was once left
    // writing into the data dir: stop it before removing the dir.
    await stopFrontDoor(join(home, 'data'), () => undefined);
    rmSync(home, { recursive: true, force: true, maxRetries: 5, retryDelay: 200 });
  });

  it.runIf(process.getuid?.() === 0)('stops the start with one clear line', () => {
    chmodSync(home, 0o700);
    const result = spawnSync(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
      env: {
        ...process.env,
        SVC_DATA_DIR: join(home, 'data'),
        SVC_RUNTIME_DIR: join(home, 'run'),
        SVC_LISTEN: '127.0.0.1:0',
        SVC_AUTH_API_KEY: 'runtime-dir-key-0123456789abcdef',
      },
      encoding: 'utf8',
      timeout: 30_000,
    });
    expect(result.status).toBe(1);
    const lines = result.stderr.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(
      new RegExp(`^slipway: failed to start: .*${home} is not searchable by others.*runtime\\.dir`),
    );
  });
});
