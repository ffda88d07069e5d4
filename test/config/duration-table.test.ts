import { describe, expect, it } from 'vitest';
import { parseDuration, parseDurationNanos } from '../../src/config/duration.js';
import { GO_INVALID, GO_NOT_POSITIVE, GO_VALID } from '../support/go-durations.js';

// The same table goes through POST /v1/apps/{id}/share-links in test/e2e/share-guard.test.ts.
describe('parseDurationNanos agrees with Go time.ParseDuration to the nanosecond', () => {
  it.each(GO_VALID)('%j is %d ns', (text, nanos) => {
    expect(parseDurationNanos(text)).toBe(nanos);
    expect(parseDuration(text)).toBe(Number(nanos) / 1e6);
  });

  it.each(GO_NOT_POSITIVE)('%j is valid but not positive (%d ns)', (text, nanos) => {
    expect(parseDurationNanos(text)).toBe(nanos);
  });

  it.each(GO_INVALID)('%j is an error', (text) => {
    expect(parseDurationNanos(text)).toBeUndefined();
    expect(parseDuration(text)).toBeUndefined();
  });

  it('treats the empty string as an error (an empty expires_in is handled before parsing)', () => {
    expect(parseDurationNanos('')).toBeUndefined();
  });
});
