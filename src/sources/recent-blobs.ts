/**
 * The small blobs an object store wrote lately, kept in memory for a short while: a deploy
 * injects the source it has just uploaded, and the sandbox then gets it from here instead of a
 * round trip to the bucket. A key is written once and never rewritten, so a copy cannot go
 * stale; it goes with `drop` (the blob's removal), its age or the room it takes.
 */
export class RecentBlobs {
  /** Oldest first (a Map keeps insertion order). */
  private readonly blobs = new Map<string, { data: Buffer; at: number }>();
  private bytes = 0;

  constructor(
    private readonly limits: { maxBlob: number; maxTotal: number; ttlMs: number },
    private readonly now: () => number = Date.now,
  ) {}

  /** Keeps a copy of `data` when it is small enough, making room by dropping the oldest. */
  add(key: string, data: Buffer): void {
    if (data.length > this.limits.maxBlob) return;
    this.drop(key);
    this.blobs.set(key, { data: Buffer.from(data), at: this.now() });
    this.bytes += data.length;
    for (const [oldest] of this.blobs) {
      if (this.bytes <= this.limits.maxTotal) break;
      this.drop(oldest);
    }
  }

  /** The blob when a copy is kept, it is at most `max` bytes and not older than the TTL. */
  get(key: string, max: number): Buffer | undefined {
    const found = this.blobs.get(key);
    if (!found) return undefined;
    if (this.now() - found.at > this.limits.ttlMs) {
      this.drop(key);
      return undefined;
    }
    return found.data.length <= max ? found.data : undefined;
  }

  drop(key: string): void {
    const found = this.blobs.get(key);
    if (!found) return;
    this.blobs.delete(key);
    this.bytes -= found.data.length;
  }
}
