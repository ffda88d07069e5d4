import { describe, expect, it } from 'vitest';
import { spread } from '../src/backoff.js';
import { backoff } from '../src/machines/app-policy.js';

describe('spread', () => {
  it('keeps a wait within its upper half', () => {
    expect(spread(1_000, 0)).toBe(500);
    expect(spread(1_000, 0.5)).toBe(750);
    expect(spread(1_000, 0.999)).toBe(1_000);
  });

  it('sends retries that failed together back at different instants', () => {
    const waits = Array.from({ length: 50 }, () => spread(5_000, Math.random()));
    for (const wait of waits) {
      expect(wait).toBeGreaterThanOrEqual(2_500);
      expect(wait).toBeLessThanOrEqual(5_000);
    }
    expect(new Set(waits).size).toBeGreaterThan(10);
  });

  it('is what the app machine spreads its capped backoff with', () => {
    expect(backoff(100, 1_000, 5)).toBe(1_000);
    expect(backoff(100, 1_000, 5, 0)).toBe(500);
    expect(backoff(100, 1_000, 2, 0.5)).toBe(150);
  });
});
