/** Percentile (nearest rank) of a list of numbers. */
export function percentile(values: number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank] as number;
}

/** The p50 of each stage over many timed requests (a stage some lacked counts where it ran). */
export function stageMedians(samples: Record<string, number>[]): Record<string, number> {
  const byStage = new Map<string, number[]>();
  for (const sample of samples) {
    for (const [stage, ms] of Object.entries(sample)) {
      byStage.set(stage, [...(byStage.get(stage) ?? []), ms]);
    }
  }
  return Object.fromEntries(
    [...byStage].map(([stage, ms]) => [stage, round(percentile(ms, 50), 1)]),
  );
}

/**
 * The server's stages, and the client's: `http` is the deploy request's time the server did not
 * account for (sending the upload, the connection), `first-request` the app's URL answering.
 */
export function withClientSide(
  stages: Record<string, number>,
  requestMs: number,
  firstRequestMs: number,
): Record<string, number> {
  // A head start's stages (`ahead-*`) ran beside the others: they are not part of the wait.
  const server = Object.entries(stages)
    .filter(([stage]) => !stage.startsWith('ahead-'))
    .reduce((a, [, ms]) => a + ms, 0);
  return { ...stages, http: Math.max(0, requestMs - server), 'first-request': firstRequestMs };
}

export const round = (n: number, digits = 2): number => Number(n.toFixed(digits));

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
