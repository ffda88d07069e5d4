import { LogRing, type AppLogLine, type LogEnd, type LogFollower } from './log-ring.js';
import type { Log } from '../logging.js';
import { errorMessage } from './types.js';

/**
 * Every app's log ring, kept by the registry for as long as the app exists, so an app's lines
 * outlive its sandboxes (a Suspended app still shows them) and its supervisors (a redeploy after a
 * broken actor). Memory only: after a server restart the rings start empty.
 */
export class AppLogs {
  private readonly rings = new Map<string, LogRing>();

  constructor(private readonly log: Log) {}

  ringOf(appId: string): LogRing {
    let ring = this.rings.get(appId);
    if (!ring) {
      ring = new LogRing();
      this.rings.set(appId, ring);
    }
    return ring;
  }

  lines(appId: string): AppLogLine[] {
    return this.rings.get(appId)?.all() ?? [];
  }

  /** A throwing follower is let go and logged; it never reaches the sandbox that printed. */
  follow(appId: string, follower: LogFollower): () => void {
    let unfollow = (): void => undefined;
    const safe: LogFollower = {
      line: (line) =>
        this.guard(
          appId,
          () => follower.line(line),
          () => unfollow(),
        ),
      end: (reason) => this.guard(appId, () => follower.end(reason)),
    };
    unfollow = this.ringOf(appId).follow(safe);
    return unfollow;
  }

  /** The app is gone: its followers hear why, its lines go. */
  remove(appId: string, reason: LogEnd): void {
    this.rings.get(appId)?.close(reason);
    this.rings.delete(appId);
  }

  /** Server shutdown: followers are told; the lines stay for a registry started again. */
  closeAll(reason: LogEnd): void {
    for (const ring of this.rings.values()) ring.close(reason);
  }

  private guard(appId: string, fn: () => void, onError?: () => void): void {
    try {
      fn();
    } catch (err) {
      this.log('error', 'log follower failed', { app: appId, err: errorMessage(err) });
      onError?.();
    }
  }
}
