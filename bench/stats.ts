/** Percentile (nearest rank) of a list of numbers. */
export function percentile(values: number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank] as number;
}

export const round = (n: number, digits = 2): number => Number(n.toFixed(digits));

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
