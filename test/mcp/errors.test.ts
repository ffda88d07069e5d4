import { describe, expect, it } from 'vitest';
import { AppError } from '../../src/errors.js';
import { toolError } from '../../src/mcp/errors.js';

describe('tool errors', () => {
  it('tell an agent refused for too many attempts how long to wait', () => {
    const busy = new AppError(
      429,
      'too_many_attempts',
      'too many share-link passwords are being hashed right now; retry in 1 s',
      { retryAfterSeconds: 1 },
    );
    expect(toolError(busy, 'create_share_link')).toEqual({
      code: 'too_many_attempts',
      message: 'too many share-link passwords are being hashed right now; retry in 1 s',
      next_step: 'wait 1 s and call create_share_link again',
      retry_after_seconds: 1,
    });
  });
});
