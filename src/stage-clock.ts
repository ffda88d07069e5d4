/**
 * Where one deploy (or rollback) spent its time, stage by stage: each `mark` ends the stage that
 * ran since the mark before it, on the monotonic clock. The layers a deploy passes through mark
 * as they go; the HTTP answer carries the result as a `Server-Timing` header, and nothing else
 * reads it. A mark costs one `performance.now()` and an array push.
 */
export class StageClock {
  private last: number;
  private readonly spans: { stage: string; ms: number }[] = [];

  /** `now`: the clock in ms; the monotonic one unless a test drives its own. */
  constructor(private readonly now: () => number = () => performance.now()) {
    this.last = now();
  }

  /**
   * Ends `stage` now. `parts`: sub-stages timed elsewhere (the sandbox's agent) inside this one,
   * in ms; they are listed on their own and the stage keeps what they leave (the round trip).
   */
  mark(stage: string, parts: Record<string, number> = {}): void {
    const now = this.now();
    let rest = now - this.last;
    this.last = now;
    for (const [name, ms] of Object.entries(parts)) {
      if (!Number.isFinite(ms) || ms < 0) continue;
      this.spans.push({ stage: name, ms });
      rest -= ms;
    }
    this.spans.push({ stage, ms: Math.max(0, rest) });
  }

  /**
   * Work that ran beside the stages (a deploy's head start, while its rows were written), in ms:
   * listed with them, never taken from them.
   */
  aside(parts: Record<string, number>): void {
    for (const [stage, ms] of Object.entries(parts)) {
      if (Number.isFinite(ms) && ms >= 0) this.spans.push({ stage, ms });
    }
  }

  /**
   * Stages in the order they ended, in ms to 0.1 ms; a stage marked twice (a retried claim) is
   * summed.
   */
  stages(): Record<string, number> {
    const out: Record<string, number> = {};
    for (const { stage, ms } of this.spans) out[stage] = (out[stage] ?? 0) + ms;
    for (const stage of Object.keys(out)) out[stage] = Math.round((out[stage] ?? 0) * 10) / 10;
    return out;
  }

  /** The `Server-Timing` header value: `inspect;dur=1.2, claim;dur=0.4, ...`. */
  header(): string {
    return Object.entries(this.stages())
      .map(([stage, ms]) => `${stage};dur=${ms}`)
      .join(', ');
  }
}

/** Reads a `Server-Timing` header back into stages (the bench's side). */
export function parseServerTiming(header: string | null): Record<string, number> {
  const out: Record<string, number> = {};
  for (const entry of (header ?? '').split(',')) {
    const [name, ...params] = entry.trim().split(';');
    const dur = params.map((p) => /^\s*dur=([\d.]+)\s*$/.exec(p)?.[1]).find(Boolean);
    if (name && dur !== undefined) out[name] = Number(dur);
  }
  return out;
}
