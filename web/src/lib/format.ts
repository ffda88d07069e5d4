const units: [Intl.RelativeTimeFormatUnit, number][] = [
  ['day', 86_400_000],
  ['hour', 3_600_000],
  ['minute', 60_000],
  ['second', 1_000],
];
const relative = new Intl.RelativeTimeFormat(undefined, { numeric: 'auto' });

/** "3 minutes ago", from an ISO 8601 time. */
export function ago(iso: string): string {
  const diff = Date.parse(iso) - Date.now();
  if (Number.isNaN(diff)) return iso;
  for (const [unit, ms] of units) {
    if (Math.abs(diff) >= ms || unit === 'second')
      return relative.format(Math.round(diff / ms), unit);
  }
  return iso;
}

export const exact = (iso: string): string => new Date(iso).toLocaleString();

/** "1 file", "3 files". */
export const count = (n: number, noun: string): string => `${n} ${noun}${n === 1 ? '' : 's'}`;
