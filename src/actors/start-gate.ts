/**
 * The cold starts a server restart owes (apps whose sandbox did not survive it), let through a few
 * at a time so that a loaded host is not stampeded by every app at once (issue 23, item 4). The
 * most recently used app goes first; a request for an app still waiting moves it to the front.
 * It only orders and bounds runtime work: the app machines never hear of it (design.md §3).
 */

/** Gives the slot back; calling it again is a no-op. */
export type ReleaseSlot = () => void;

interface Waiter {
  appId: string;
  /** The app's last use (ms since the epoch; 0: never): the higher, the sooner. */
  rank: number;
  /** Set by a request while waiting: the later promoted, the sooner; beats any rank. */
  promoted: number;
  /** Arrival order, for equal ranks. */
  seq: number;
  grant: (release: ReleaseSlot | undefined) => void;
}

export class StartGate {
  private running = 0;
  private readonly waiting: Waiter[] = [];
  private seq = 0;
  private promotions = 0;
  private closed = false;

  /** `limit` starts at once; `rank` says how recently an app was used (higher: sooner). */
  constructor(
    private readonly limit: number,
    private readonly rank: (appId: string) => number,
  ) {
    if (!Number.isInteger(limit) || limit < 1) throw new RangeError('limit must be at least 1');
  }

  /**
   * Resolves with the release of a slot once the app's turn comes; undefined once the gate is
   * closed (the server stops), and then nothing is to be started.
   */
  enter(appId: string): Promise<ReleaseSlot | undefined> {
    if (this.closed) return Promise.resolve(undefined);
    if (this.running < this.limit && this.waiting.length === 0) {
      return Promise.resolve(this.take());
    }
    return new Promise((grant) => {
      const rank = this.rank(appId);
      this.waiting.push({ appId, rank, promoted: 0, seq: ++this.seq, grant });
    });
  }

  /** A request came for the app: if it waits, it goes next. True if it was waiting. */
  promote(appId: string): boolean {
    const mine = this.waiting.filter((w) => w.appId === appId);
    const promotion = ++this.promotions;
    for (const w of mine) w.promoted = promotion;
    return mine.length > 0;
  }

  /** Starts under way (diagnostics, tests). */
  get inFlight(): number {
    return this.running;
  }

  /** Apps waiting for their turn, next first (diagnostics, tests). */
  queued(): string[] {
    return [...this.waiting].sort(before).map((w) => w.appId);
  }

  /** The server stops: every waiter hears there is nothing to start. */
  close(): void {
    this.closed = true;
    for (const w of this.waiting.splice(0)) w.grant(undefined);
  }

  private take(): ReleaseSlot {
    this.running += 1;
    let held = true;
    return () => {
      if (!held) return;
      held = false;
      this.running -= 1;
      this.next();
    };
  }

  private next(): void {
    while (!this.closed && this.running < this.limit && this.waiting.length > 0) {
      this.waiting.sort(before);
      const w = this.waiting.shift() as Waiter;
      w.grant(this.take());
    }
  }
}

function before(a: Waiter, b: Waiter): number {
  return b.promoted - a.promoted || b.rank - a.rank || a.seq - b.seq;
}
