/**
 * Durations in Go's `time.ParseDuration` syntax: an optional sign, then one or more decimal numbers
 * each with a unit (`ns`, `us`, `µs`, `μs`, `ms`, `s`, `m`, `h`), e.g. `300ms`, `1.5h`, `2h45m`.
 * There is no `d` unit, no spaces, and a bare `0` is the only number allowed without a unit.
 */
export function parseDuration(text: string): number | undefined {
  const nanos = parseDurationNanos(text);
  return nanos === undefined ? undefined : Number(nanos) / 1e6;
}

/** Formats milliseconds the way Go's `Duration.String` does for whole units (`1h30m0s`, `250ms`). */
export function formatDuration(ms: number): string {
  if (ms === 0) return '0s';
  const sign = ms < 0 ? '-' : '';
  let rest = Math.abs(ms);
  if (rest < 1000) return `${sign}${rest}ms`;
  const h = Math.floor(rest / 3_600_000);
  rest -= h * 3_600_000;
  const m = Math.floor(rest / 60_000);
  rest -= m * 60_000;
  const s = rest / 1000;
  if (h > 0) return `${sign}${h}h${m}m${s}s`;
  if (m > 0) return `${sign}${m}m${s}s`;
  return `${sign}${s}s`;
}

const UNIT_NANOS: Record<string, bigint> = {
  ns: 1n,
  us: 1_000n,
  µs: 1_000n, // U+00B5 micro sign
  μs: 1_000n, // U+03BC Greek mu
  ms: 1_000_000n,
  s: 1_000_000_000n,
  m: 60_000_000_000n,
  h: 3_600_000_000_000n,
};

const LIMIT = 1n << 63n;

/**
 * The exact integer nanoseconds Go's `time.ParseDuration` returns (an int64), or undefined where
 * Go returns an error. A line-by-line port, so that the edge cases agree too: fractions are
 * truncated per term (`1.5ns` is 1ns, `0.5ns` is 0), and values beyond int64 are invalid.
 */
export function parseDurationNanos(text: string): bigint | undefined {
  let s = text;
  let neg = false;
  if (s.startsWith('-') || s.startsWith('+')) {
    neg = s.startsWith('-');
    s = s.slice(1);
  }
  if (s === '0') return 0n;
  if (s === '') return undefined;
  let d = 0n;
  while (s !== '') {
    if (!/^[0-9.]/.test(s)) return undefined;
    const int = leadingInt(s);
    if (int === undefined) return undefined;
    const pre = int.rest.length !== s.length;
    s = int.rest;
    let fraction = { value: 0n, scale: 1 };
    let post = false;
    if (s.startsWith('.')) {
      const parsed = leadingFraction(s.slice(1));
      post = parsed.rest.length !== s.length - 1;
      fraction = parsed;
      s = parsed.rest;
    }
    // Digits are needed on at least one side of the dot: `.s` is invalid, `.5s` and `5.s` are not.
    if (!pre && !post) return undefined;
    // Go's unit is every character up to the next digit or dot: `1hh` has the unknown unit `hh`.
    const unitText = /^[^0-9.]*/.exec(s)?.[0] ?? '';
    const unit = UNIT_NANOS[unitText];
    if (unitText === '' || unit === undefined) return undefined;
    s = s.slice(unitText.length);
    if (int.value > LIMIT / unit) return undefined;
    let v = int.value * unit;
    if (fraction.value > 0n) {
      // Go does this step in float64; doing the same keeps the truncation identical.
      v += BigInt(Math.trunc(Number(fraction.value) * (Number(unit) / fraction.scale)));
      if (v > LIMIT) return undefined;
    }
    d += v;
    if (d > LIMIT) return undefined;
  }
  if (neg) return -d;
  return d > LIMIT - 1n ? undefined : d;
}

function leadingInt(s: string): { value: bigint; rest: string } | undefined {
  let x = 0n;
  let i = 0;
  for (; i < s.length; i += 1) {
    const c = s.charCodeAt(i);
    if (c < 48 || c > 57) break;
    if (x > LIMIT / 10n) return undefined;
    x = x * 10n + BigInt(c - 48);
    if (x > LIMIT) return undefined;
  }
  return { value: x, rest: s.slice(i) };
}

/** Digits after the dot; past int64 precision Go stops accumulating rather than failing. */
function leadingFraction(s: string): { value: bigint; scale: number; rest: string } {
  let x = 0n;
  let scale = 1;
  let overflow = false;
  let i = 0;
  for (; i < s.length; i += 1) {
    const c = s.charCodeAt(i);
    if (c < 48 || c > 57) break;
    if (overflow) continue;
    if (x > (LIMIT - 1n) / 10n) {
      overflow = true;
      continue;
    }
    const y = x * 10n + BigInt(c - 48);
    if (y > LIMIT) {
      overflow = true;
      continue;
    }
    x = y;
    scale *= 10;
  }
  return { value: x, scale, rest: s.slice(i) };
}
