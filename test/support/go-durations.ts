/**
 * What Go's `time.ParseDuration` returns for each text (nanoseconds), or that it fails. The values
 * follow Go's algorithm (src/time/format.go): fractions are truncated per term, the result must
 * fit an int64, and the unit is every character up to the next digit or dot.
 */
export const GO_VALID: ReadonlyArray<readonly [string, bigint]> = [
  // The list.
  ['1h', 3_600_000_000_000n],
  ['90m', 5_400_000_000_000n],
  ['1h30m', 5_400_000_000_000n],
  ['1.5h', 5_400_000_000_000n],
  ['300ms', 300_000_000n],
  ['2us', 2_000n],
  ['1µs', 1_000n], // U+00B5 micro sign
  // Go's other spellings and edges.
  ['1μs', 1_000n], // U+03BC Greek mu
  ['2h45m', 9_900_000_000_000n],
  ['.5s', 500_000_000n],
  ['1.s', 1_000_000_000n],
  ['0.1h', 360_000_000_000n],
  ['1.5ns', 1n],
  ['+5m', 300_000_000_000n],
  ['1h0m0s', 3_600_000_000_000n],
  ['9223372036854775807ns', 9_223_372_036_854_775_807n],
  ['2562047h47m16.854775807s', 9_223_372_036_854_775_807n],
];

/** Valid Go durations that are not positive: a share link refuses them as expires_in. */
export const GO_NOT_POSITIVE: ReadonlyArray<readonly [string, bigint]> = [
  ['0', 0n],
  ['-5m', -300_000_000_000n],
  ['0s', 0n],
  ['-0', 0n],
  ['0.5ns', 0n],
  ['0.0000000001s', 0n],
  ['-2562047h47m16.854775808s', -9_223_372_036_854_775_808n],
];

/** Texts Go's time.ParseDuration rejects. */
export const GO_INVALID: readonly string[] = [
  // The list.
  '7d',
  '1 h',
  'h',
  '1hh',
  'abc',
  // Go's other errors: no number, no unit, unknown unit, stray characters, int64 overflow.
  '-',
  '+',
  '.',
  '.s',
  '5',
  '00',
  '0.0',
  '1s5',
  '1e3s',
  '1H',
  ' 1h',
  '1h ',
  '1h-5m',
  '1h30',
  '2562048h',
  '9223372036854775808ns',
  '2562047h47m16.854775808s',
];
