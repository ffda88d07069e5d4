/**
 * Durations in Go's `time.ParseDuration` syntax: an optional sign, then one or more decimal numbers
 * each with a unit (`ns`, `us`, `µs`, `μs`, `ms`, `s`, `m`, `h`), e.g. `300ms`, `1.5h`, `2h45m`.
 * There is no `d` unit, no spaces, and a bare `0` is the only number allowed without a unit.
 */
export function parseDuration(text: string): number | undefined {
  const nanos = parseDurationNanos(text);
  return nanos === undefined ? undefined : nanos / 1e6;
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

const UNIT_NANOS: Record<string, number> = {
  ns: 1,
  us: 1e3,
  µs: 1e3, // U+00B5 micro sign
  μs: 1e3, // U+03BC Greek mu
  ms: 1e6,
  s: 1e9,
  m: 60e9,
  h: 3600e9,
};

const TERM = /^(\d+\.?\d*|\.\d+)(ns|us|µs|μs|ms|s|m|h)/;

function parseDurationNanos(text: string): number | undefined {
  let rest = text;
  let sign = 1;
  if (rest.startsWith('-') || rest.startsWith('+')) {
    sign = rest.startsWith('-') ? -1 : 1;
    rest = rest.slice(1);
  }
  if (rest === '0') return 0;
  if (rest === '') return undefined;
  let total = 0;
  while (rest !== '') {
    const match = TERM.exec(rest);
    if (!match) return undefined;
    const [whole, num, unit] = match as unknown as [string, string, string];
    total += Number(num) * (UNIT_NANOS[unit] ?? Number.NaN);
    rest = rest.slice(whole.length);
  }
  return Number.isFinite(total) ? sign * total : undefined;
}
