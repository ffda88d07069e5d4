import { describe, expect, it } from 'vitest';
import { apiError } from '../../src/cli/errors.js';

describe('the next step the CLI prints for an API error', () => {
  it('asks to fix the app for a deploy that failed, not for one somebody cancelled', () => {
    const failed = apiError(500, {
      code: 'deploy_failed',
      message: 'deploy of web failed: CrashLoop: version 2 exited',
      details: { app_id: 'web', reason: 'CrashLoop' },
    });
    expect(failed.hint).toBe('fix the app and deploy again; its logs: slipway logs web');
    const cancelled = apiError(500, {
      code: 'deploy_failed',
      message: 'deploy of web failed: Cancelled: the deploy of version 2 was cancelled',
      details: { app_id: 'web', reason: 'Cancelled' },
    });
    expect(cancelled.hint).toBe('deploy again when you want it live');
  });
});
