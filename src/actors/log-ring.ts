import { NOTE_PREFIX, type LogLine } from '../runtime/runtime.js';

/** A line of an app's log, with the version whose sandbox printed it (or that a note is about). */
export type AppLogLine = LogLine & { version: number };

/** A log line as users read it everywhere (SSE, deploy failures, MCP): `<ISO time> <text>`. */
export const logLineText = (line: LogLine): string => `${line.time} ${line.text}`;

/** design.md §6: a snapshot is the last 200 lines (of the ring of 1,000 kept per app). */
export const SNAPSHOT_LINES = 200;

/** Someone following an app's log: every new line, then the end once the app is gone. */
export interface LogFollower {
  line(line: AppLogLine): void;
  end(reason: LogEnd): void;
}

/** Why the lines stopped, as an error body's `code` and `message` (spec §7). */
export interface LogEnd {
  code: string;
  message: string;
}

/**
 * The last `capacity` log lines of one app, across its sandboxes (design.md §6: a ring of 1,000).
 * The registry keeps one per app for as long as the app exists, so a Suspended app (whose sandbox
 * is reaped) still shows its last lines. Memory only: after a server restart it starts empty.
 */
export class LogRing {
  private readonly lines: AppLogLine[] = [];
  private readonly followers = new Set<LogFollower>();

  constructor(private readonly capacity = 1_000) {}

  push(line: AppLogLine): void {
    this.lines.push(line);
    // Trim in batches: an O(n) shift per line would cost more than the line itself.
    if (this.lines.length > this.capacity + 100)
      this.lines.splice(0, this.lines.length - this.capacity);
    for (const follower of this.followers) follower.line(line);
  }

  all(): AppLogLine[] {
    return this.lines.slice(-this.capacity);
  }

  /** The app's own last lines: Slipway's notes say what happened, not why the app did. */
  tail(n: number): string[] {
    // By stream too: an app printing "[slipway] ..." itself keeps its lines in the diagnosis.
    const own = this.lines.filter((l) => l.stream !== 'system' || !l.text.startsWith(NOTE_PREFIX));
    return own.slice(-n).map((l) => l.text);
  }

  /** New lines as they are pushed; returns the unfollow function. */
  follow(follower: LogFollower): () => void {
    this.followers.add(follower);
    return () => void this.followers.delete(follower);
  }

  /** The app is gone: every follower hears why, once, and is let go. */
  close(reason: LogEnd): void {
    const followers = [...this.followers];
    this.followers.clear();
    for (const follower of followers) follower.end(reason);
  }

  get following(): number {
    return this.followers.size;
  }
}
