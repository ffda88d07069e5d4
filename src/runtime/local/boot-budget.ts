/** Never less: a quiet host boots a sandbox in well under a second, a busy one in a few. */
const FLOOR_MS = 15_000;
/** A boot this slow is stuck, however loaded the host. */
const CEILING_MS = 120_000;
/** Headroom over the slowest boot seen lately: load comes in bursts. */
const FACTOR = 5;
/** The boots remembered: enough to see a burst, few enough to forget one that ended. */
const KEEP = 20;

/**
 * How long a sandbox's agent gets to say it is ready. Not one fixed guess: a host under load boots
 * slower, so the budget follows the boots it measured (FACTOR times the slowest of the last KEEP),
 * never under FLOOR_MS nor over CEILING_MS. One per runtime.
 */
export class BootBudget {
  private readonly recent: number[] = [];

  /** A boot that finished, and how long it took. */
  record(ms: number): void {
    this.recent.push(ms);
    if (this.recent.length > KEEP) this.recent.shift();
  }

  get ms(): number {
    const slowest = Math.max(0, ...this.recent);
    return Math.min(CEILING_MS, Math.max(FLOOR_MS, Math.ceil(FACTOR * slowest)));
  }
}
