import { describe, expect, it } from 'vitest';
import { AppError } from '../../src/errors.js';
import { AttemptLimiter, type LimiterPolicy } from '../../src/services/share-limiter.js';

const POLICY: LimiterPolicy = {
  maxFailures: 3,
  windowMs: 60_000,
  baseLockMs: 10_000,
  maxLockMs: 35_000,
  maxEntries: 4,
};

function setup(policy = POLICY) {
  const clock = { t: 1_000_000 };
  const limiter = new AttemptLimiter(policy, () => clock.t);
  const fail = (key: string, times = 1): void => {
    for (let i = 0; i < times; i += 1) limiter.begin(key).failed();
  };
  return { clock, limiter, fail };
}

/** The 429 `begin` throws, or undefined when it reserved a guess. */
function refusal(limiter: AttemptLimiter, key: string): AppError | undefined {
  try {
    limiter.begin(key).succeeded();
    return undefined;
  } catch (err) {
    if (err instanceof AppError) return err;
    throw err;
  }
}

describe('AttemptLimiter: wrong share-link passwords per token', () => {
  it('locks a token after maxFailures wrong guesses, with Retry-After seconds', () => {
    const { limiter, fail, clock } = setup();
    fail('a', 3);
    const err = refusal(limiter, 'a');
    expect(err).toMatchObject({ status: 429, code: 'too_many_attempts' });
    expect(err?.details).toEqual({ retryAfterSeconds: 10 });
    clock.t += 4_500;
    expect(refusal(limiter, 'a')?.details).toEqual({ retryAfterSeconds: 6 });
    // Other tokens are untouched.
    expect(refusal(limiter, 'b')).toBeUndefined();
  });

  it('refuses even the right password while locked, then lets guesses in again', () => {
    const { limiter, fail, clock } = setup();
    fail('a', 3);
    expect(() => limiter.begin('a')).toThrow(AppError);
    clock.t += 10_000;
    expect(refusal(limiter, 'a')).toBeUndefined();
  });

  it('doubles each further lock, up to maxLockMs', () => {
    const { limiter, fail, clock } = setup();
    const locks: number[] = [];
    for (let i = 0; i < 4; i += 1) {
      fail('a', 3);
      const seconds = refusal(limiter, 'a')?.details?.retryAfterSeconds;
      locks.push(Number(seconds));
      clock.t += Number(seconds) * 1000;
    }
    expect(locks).toEqual([10, 20, 35, 35]);
  });

  it('counts failures per window: old failures expire, a success clears them', () => {
    const { limiter, fail, clock } = setup();
    fail('a', 2);
    clock.t += 60_000;
    fail('a', 2);
    expect(refusal(limiter, 'a')).toBeUndefined();
    fail('a', 2);
    limiter.begin('a').succeeded();
    fail('a', 2);
    expect(refusal(limiter, 'a')).toBeUndefined();
  });

  it('counts guesses still being checked, so concurrent guesses cannot exceed the budget', () => {
    const { limiter } = setup();
    const pending = [limiter.begin('a'), limiter.begin('a'), limiter.begin('a')];
    expect(refusal(limiter, 'a')).toMatchObject({ status: 429 });
    for (const attempt of pending) attempt.failed();
    expect(refusal(limiter, 'a')?.details).toEqual({ retryAfterSeconds: 10 });
  });

  it('settles an attempt once, however often it is reported', () => {
    const { limiter } = setup();
    const attempt = limiter.begin('a');
    attempt.failed();
    attempt.failed();
    attempt.failed();
    expect(refusal(limiter, 'a')).toBeUndefined();
  });

  it('never tracks more than maxEntries tokens, dropping the least recently used first', () => {
    const { limiter, fail } = setup();
    for (const key of ['k1', 'k2', 'k3', 'k4']) fail(key);
    fail('k1');
    fail('k5');
    // k2 was least recently used: it starts over (2 failures would lock it had it been kept).
    fail('k2', 2);
    expect(refusal(limiter, 'k2')).toBeUndefined();
    // k1 was touched, so it kept its 2 failures: one more locks it.
    fail('k1');
    expect(refusal(limiter, 'k1')).toMatchObject({ status: 429 });
    for (let i = 6; i < 200; i += 1) fail(`k${i}`);
    expect(limiter.size).toBe(4);
  });

  it('forgets a token after a quiet window, and on forget()', () => {
    const { limiter, fail, clock } = setup();
    fail('a', 3);
    clock.t += 10_000 + 60_000;
    fail('b');
    expect(refusal(limiter, 'a')).toBeUndefined();
    fail('b', 2);
    limiter.forget('b');
    expect(refusal(limiter, 'b')).toBeUndefined();
  });
});
