import { describe, expect, it } from 'vitest';
import { AppError } from '../../src/errors.js';
import { validateMetadata } from '../../src/services/deploy-metadata.js';
import { parseCreateInput } from '../../src/services/share-input.js';
import { GO_INVALID, GO_NOT_POSITIVE, GO_VALID } from '../support/go-durations.js';
import { isObject, loadSpec } from './openapi-doc.js';

const schemas = loadSpec().components;
const duration = isObject(schemas) && isObject(schemas.schemas) ? schemas.schemas.Duration : null;
const pattern = new RegExp(isObject(duration) ? String(duration.pattern) : '^$', 'u');

/**
 * What a pattern cannot say and the Duration description says in words: totals past Go's int64
 * nanoseconds, and fractions finer than a nanosecond (which count as zero). These match the
 * pattern and are refused; the test pins that they are the only such values in the tables.
 */
const BEYOND_PATTERN = new Set([
  '2562048h',
  '9223372036854775808ns',
  '2562047h47m16.854775808s',
  '0.5ns',
  '0.0000000001s',
]);

const table: string[] = [
  ...GO_VALID.map(([text]) => text),
  ...GO_NOT_POSITIVE.map(([text]) => text),
  ...GO_INVALID,
  // ttl's floor of 1s and the spellings around it.
  '999ms',
  '1000ms',
  '0.5s',
  '1s',
  '500ms500ms',
  '0s1s',
  '00001m',
  '0h0m1s',
  '-1s',
  '',
];

/** True when POST /v1/apps/{id}/share-links takes the text as expires_in. */
function expiresInAccepted(text: string): boolean {
  try {
    parseCreateInput({ expires_in: text });
    return true;
  } catch (err) {
    if (!(err instanceof AppError)) throw err;
    return false;
  }
}

/** True when a deploy's metadata takes the text as ttl. */
function ttlAccepted(text: string): boolean {
  try {
    validateMetadata({ name: 'app', ttl: text });
    return true;
  } catch (err) {
    if (!(err instanceof AppError)) throw err;
    return false;
  }
}

describe('the Duration pattern of api/openapi.yaml against the server parsers', () => {
  it.each(table.filter((t) => t !== '' && !BEYOND_PATTERN.has(t)))(
    '%j: the pattern matches exactly when expires_in is accepted',
    (text) => {
      expect(pattern.test(text)).toBe(expiresInAccepted(text));
    },
  );

  it('leaves only the values the description names beyond the pattern', () => {
    for (const text of BEYOND_PATTERN) {
      expect(pattern.test(text), text).toBe(true);
      expect(expiresInAccepted(text), text).toBe(false);
    }
  });

  it.each(table.filter((t) => t !== '' && !BEYOND_PATTERN.has(t)))(
    '%j: ttl is accepted exactly when the pattern matches and it is at least 1s',
    (text) => {
      const atLeastOneSecond = pattern.test(text) && expiresInAccepted(text) && seconds(text) >= 1;
      expect(ttlAccepted(text)).toBe(atLeastOneSecond);
    },
  );

  it('takes an empty text as "the default" for both, which the spec allows beside Duration', () => {
    expect(expiresInAccepted('')).toBe(true);
    expect(ttlAccepted('')).toBe(true);
    expect(pattern.test('')).toBe(false);
  });
});

/** Seconds of a positive Go duration in the tables (no overflow there once BEYOND is out). */
function seconds(text: string): number {
  const units: Record<string, number> = {
    ns: 1e-9,
    us: 1e-6,
    µs: 1e-6,
    μs: 1e-6,
    ms: 1e-3,
    s: 1,
    m: 60,
    h: 3600,
  };
  let total = 0;
  for (const [, num, unit] of text.matchAll(/([0-9.]+)([^0-9.]+)/g)) {
    total += Number(num) * (units[unit ?? ''] ?? Number.NaN);
  }
  return total;
}
