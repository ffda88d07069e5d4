import { LRUCache } from 'lru-cache';
import type { UserRecord } from '../persistence/store.js';

/**
 * User records by user ID for `auth.identityCacheTTL`, so a suspension or role change made outside
 * Slipway's API reaches requests within the TTL. A TTL of 0 disables it: every request reads the store.
 */
export class IdentityCache {
  private readonly lru: LRUCache<string, UserRecord> | undefined;

  constructor(ttlMs: number, max = 10_000) {
    this.lru = ttlMs > 0 ? new LRUCache<string, UserRecord>({ max, ttl: ttlMs }) : undefined;
  }

  get(userId: string): UserRecord | undefined {
    return this.lru?.get(userId);
  }

  /** How much longer the user's record is kept; 0 when it is not (or the cache is off). */
  remainingMs(userId: string): number {
    return Math.max(0, this.lru?.getRemainingTTL(userId) ?? 0);
  }

  set(record: UserRecord): void {
    this.lru?.set(record.id, record);
  }

  /** Drops one user (changed through /api/users): the next request reads the store. */
  forget(userId: string): void {
    this.lru?.delete(userId);
  }
}
