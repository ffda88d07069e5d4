import { describe, expect, it } from 'vitest';
import { formatDuration, parseDuration } from '../../src/config/duration.js';

// Expected values are what Go's time.ParseDuration returns for the same text.
describe('parseDuration follows Go time.ParseDuration', () => {
  it.each([
    ['1h', 3_600_000],
    ['90m', 5_400_000],
    ['1h30m', 5_400_000],
    ['1.5h', 5_400_000],
    ['300ms', 300],
    ['2us', 0.002],
    ['1µs', 0.001],
    ['1μs', 0.001],
    ['1ns', 0.000001],
    ['2h45m', 9_900_000],
    ['.5s', 500],
    ['1.s', 1000],
    ['0', 0],
    ['-5m', -300_000],
    ['+5m', 300_000],
  ])('%s is %d ms', (text, ms) => {
    expect(parseDuration(text)).toBeCloseTo(ms, 9);
  });

  it.each(['7d', '1 h', 'h', '1hh', 'abc', '', '-', '5', '1h 30m', ' 1h', '1H', '.s', '1e3s'])(
    '%j is invalid',
    (text) => {
      expect(parseDuration(text)).toBeUndefined();
    },
  );

  it('formats whole durations like Go', () => {
    expect(formatDuration(5_400_000)).toBe('1h30m0s');
    expect(formatDuration(250)).toBe('250ms');
    expect(formatDuration(30_000)).toBe('30s');
  });
});
