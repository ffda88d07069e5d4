/** Lines a sandbox may put in the host log at once, and how many more each second. */
const BURST = 50;
const PER_SECOND = 10;

/**
 * A token bucket on one sandbox's diagnostics: its agent shares a process with a node app, so
 * what arrives on the diagnostics fd is the app's to forge and flood. Past the rate, lines are
 * dropped and counted; the next line let through says how many went.
 */
export class DiagLimiter {
  private tokens = BURST;
  private last = Date.now();
  private dropped = 0;

  constructor(private readonly now: () => number = Date.now) {
    this.last = now();
  }

  /** undefined: drop this line; a number: let it through, that many were dropped before it. */
  take(): number | undefined {
    const now = this.now();
    this.tokens = Math.min(BURST, this.tokens + ((now - this.last) / 1000) * PER_SECOND);
    this.last = now;
    if (this.tokens < 1) {
      this.dropped += 1;
      return undefined;
    }
    this.tokens -= 1;
    const dropped = this.dropped;
    this.dropped = 0;
    return dropped;
  }
}
