const FIRST_MS = 1_000;
const MAX_MS = 30_000;

/**
 * The wait before the event stream connects again. It doubles (1 s, 2 s, 4 s … 30 s at most) only
 * while connecting fails: once the server accepts a stream it starts again at 1 s, so a tab whose
 * streams end without an event is never left without one for long. Before, such a tab could wait
 * half a minute, and miss that half minute's lifecycle events.
 */
export class Reconnect {
  private next = FIRST_MS;

  /** The server accepted a stream. */
  opened(): void {
    this.next = FIRST_MS;
  }

  /** How long to wait before the next attempt. */
  delay(): number {
    const wait = this.next;
    this.next = Math.min(wait * 2, MAX_MS);
    return wait;
  }
}
