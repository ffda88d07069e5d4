import type { ObjectStoreFault } from '../persistence/storage-faults.js';

/**
 * What is known of a remote store, for a synchronous ping and probe: the last check's outcome,
 * checked again in the background once older than `everyMs` (one check at a time). Until the first
 * check answers, the store is not known to be down. Real calls update it too: a failure marks it
 * down at once, a write that lands marks it up.
 */
export class PingCache {
  private last: ObjectStoreFault | undefined;
  private checkedAt = -Infinity;
  private checking = false;
  private check: (() => Promise<unknown>) | undefined;

  constructor(
    private readonly everyMs: number,
    private readonly now: () => number,
  ) {}

  /** Starts checking with `check`, which records its own outcome through `failed`/`passed`. */
  watch(check: () => Promise<unknown>): void {
    this.check = check;
    this.refresh();
  }

  /** Why the store is down, or undefined when it is not known to be. */
  fault(): ObjectStoreFault | undefined {
    if (this.now() - this.checkedAt >= this.everyMs) this.refresh();
    return this.last;
  }

  failed(fault: ObjectStoreFault): ObjectStoreFault {
    this.last = fault;
    this.checkedAt = this.now();
    return fault;
  }

  passed(): void {
    this.last = undefined;
    this.checkedAt = this.now();
  }

  private refresh(): void {
    if (this.checking || !this.check) return;
    this.checking = true;
    void this.check()
      .then(
        () => this.passed(),
        // `failed` has recorded it already; a failed check is an answer, not an error.
        () => undefined,
      )
      .finally(() => {
        this.checking = false;
      });
  }
}
