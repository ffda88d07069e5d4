/** Lines a sandbox may put in the host log at once, and how many more each second. */
const BURST = 50;
const PER_SECOND = 10;
/** Bytes of diagnostics one sandbox may put in the host log per window (about 46 MB a day). */
export const DIAG_BYTES_PER_WINDOW = 32 * 1024;
export const DIAG_WINDOW_MS = 60_000;

/** What one sandbox's limiter refused in a window: reported once, at the window's end. */
export interface DiagDropped {
  lines: number;
  bytes: number;
}

/**
 * Bounds one sandbox's diagnostics: its agent shares a process with a node app, so what arrives on
 * the diagnostics fd is the app's to forge and flood. A token bucket bounds lines, a budget per
 * minute bounds bytes (a few long lines a second would otherwise fill the host's disk); what either
 * refuses is counted and summarised once per window, by `report`, not line by line.
 */
export class DiagLimiter {
  private tokens = BURST;
  private last: number;
  private windowStart: number;
  private bytes = 0;
  private dropped: DiagDropped = { lines: 0, bytes: 0 };
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly report: (dropped: DiagDropped) => void,
    private readonly now: () => number = Date.now,
  ) {
    this.last = now();
    this.windowStart = this.last;
  }

  /** Whether a line of `size` bytes may go to the host log. */
  take(size: number): boolean {
    const now = this.now();
    this.tokens = Math.min(BURST, this.tokens + ((now - this.last) / 1000) * PER_SECOND);
    this.last = now;
    if (now - this.windowStart >= DIAG_WINDOW_MS) {
      this.flush();
      this.windowStart = now;
      this.bytes = 0;
    }
    if (this.tokens < 1 || this.bytes + size > DIAG_BYTES_PER_WINDOW) {
      this.dropped.lines += 1;
      this.dropped.bytes += size;
      // Reported when the window ends even if the sandbox falls silent.
      this.timer ??= setTimeout(
        () => this.flush(),
        this.windowStart + DIAG_WINDOW_MS - now,
      ).unref();
      return false;
    }
    this.tokens -= 1;
    this.bytes += size;
    return true;
  }

  /** The sandbox is gone: what was dropped since the last report is reported now. */
  close(): void {
    this.flush();
  }

  private flush(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    if (this.dropped.lines === 0) return;
    const dropped = this.dropped;
    this.dropped = { lines: 0, bytes: 0 };
    this.report(dropped);
  }
}
