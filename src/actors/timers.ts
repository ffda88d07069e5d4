import type { TimerKind } from '../machines/app-machine.js';

/** setTimeout's ceiling (~24.8 days); longer deadlines are reached in hops. */
const MAX_DELAY_MS = 2 ** 31 - 1;

/**
 * One timer per kind for one app, armed at absolute deadlines taken from the machine's context, so
 * the same deadlines can be armed again after a restart. Arming a kind replaces its previous timer.
 */
export class DeadlineTimers {
  private readonly handles = new Map<TimerKind, ReturnType<typeof setTimeout>>();

  constructor(private readonly now: () => number) {}

  arm(kind: TimerKind, at: number, fire: () => void): void {
    this.cancel(kind);
    const delay = Math.max(0, at - this.now());
    const handle = setTimeout(
      () => {
        this.handles.delete(kind);
        // Node fires over-long timers at once; hop until the real deadline instead.
        if (delay > MAX_DELAY_MS) this.arm(kind, at, fire);
        else fire();
      },
      Math.min(delay, MAX_DELAY_MS),
    );
    handle.unref?.();
    this.handles.set(kind, handle);
  }

  cancel(kind: TimerKind): void {
    const handle = this.handles.get(kind);
    if (handle !== undefined) clearTimeout(handle);
    this.handles.delete(kind);
  }

  clear(): void {
    for (const kind of [...this.handles.keys()]) this.cancel(kind);
  }

  /** The kinds armed now (diagnostics and tests). */
  armed(): TimerKind[] {
    return [...this.handles.keys()];
  }
}
