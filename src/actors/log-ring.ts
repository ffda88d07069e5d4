import type { LogLine } from '../runtime/runtime.js';

/** The last `capacity` log lines of one app, across its sandboxes (design.md §6: a ring of 1,000). */
export class LogRing {
  private readonly lines: LogLine[] = [];

  constructor(private readonly capacity = 1_000) {}

  push(line: LogLine): void {
    this.lines.push(line);
    // Trim in batches: an O(n) shift per line would cost more than the line itself.
    if (this.lines.length > this.capacity + 100)
      this.lines.splice(0, this.lines.length - this.capacity);
  }

  all(): LogLine[] {
    return this.lines.slice(-this.capacity);
  }

  tail(n: number): string[] {
    return this.lines.slice(-n).map((l) => l.text);
  }
}
