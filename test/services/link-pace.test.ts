import { describe, expect, it } from 'vitest';
import { LinkPace, type PacePolicy } from '../../src/services/link-pace.js';

const POLICY: PacePolicy = {
  hotAfter: 3,
  windowMs: 60_000,
  paceMs: 1_000,
  maxWaitMs: 2_500,
  maxEntries: 2,
};

/** A LinkPace on a fake clock whose sleeps advance the clock and are recorded. */
function paced() {
  let now = 0;
  const sleeps: number[] = [];
  const pace = new LinkPace(
    POLICY,
    () => now,
    async (ms) => void sleeps.push(ms),
  );
  return { pace, sleeps, advance: (ms: number) => (now += ms) };
}

describe('per-link pacing of share-link guesses', () => {
  it('lets guesses through at once until the link has had hotAfter wrong ones', async () => {
    const { pace, sleeps } = paced();
    for (let i = 0; i < POLICY.hotAfter - 1; i += 1) pace.failed('t');
    expect(pace.hot('t')).toBe(false);
    await pace.turn('t');
    pace.failed('t');
    expect(pace.hot('t')).toBe(true);
    expect(sleeps).toEqual([]);
  });

  it('then checks guesses paceMs apart and refuses one that would wait past maxWaitMs', async () => {
    const { pace, sleeps } = paced();
    for (let i = 0; i < POLICY.hotAfter; i += 1) pace.failed('t');
    await Promise.all([pace.turn('t'), pace.turn('t'), pace.turn('t')]);
    expect(sleeps).toEqual([1_000, 2_000]);
    await expect(pace.turn('t')).rejects.toMatchObject({ status: 429, code: 'too_many_attempts' });
    // Other links are not slowed down.
    await pace.turn('other');
    expect(sleeps).toHaveLength(2);
  });

  it('cools down when the window ends, and forgets revoked links', async () => {
    const { pace, advance } = paced();
    for (let i = 0; i < POLICY.hotAfter; i += 1) pace.failed('t');
    expect(pace.hotForMs('t')).toBe(POLICY.windowMs);
    advance(POLICY.windowMs);
    expect(pace.hot('t')).toBe(false);
    for (let i = 0; i < POLICY.hotAfter; i += 1) pace.failed('u');
    pace.forget('u');
    expect(pace.hot('u')).toBe(false);
  });

  it('tracks at most maxEntries links', () => {
    const { pace } = paced();
    for (const token of ['a', 'b', 'c']) {
      for (let i = 0; i < POLICY.hotAfter; i += 1) pace.failed(token);
    }
    expect(pace.hot('a')).toBe(false);
    expect(pace.hot('c')).toBe(true);
  });
});
