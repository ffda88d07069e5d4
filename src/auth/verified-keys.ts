import { LRUCache } from 'lru-cache';
import type { Identity } from './identity.js';

/**
 * Identities of bearer tokens verified lately, by the token's sha256 (never the token itself), so
 * a client's next request skips the key lookup and the user record. Only for a mode whose verdict
 * on a token is the token's alone and never expires (API keys). An entry lasts no longer than the
 * user record it was made from would in the identity cache, and goes at once when its user is
 * changed through the API (a suspension, a new key, a delete); failures are never remembered.
 */
export class VerifiedKeys {
  private readonly lru: LRUCache<string, Identity> | undefined;

  constructor(ttlMs: number, max = 10_000) {
    this.lru = ttlMs > 0 ? new LRUCache<string, Identity>({ max, ttl: ttlMs }) : undefined;
  }

  /** A copy: a request's identity is its own. */
  get(digest: Buffer): Identity | undefined {
    const known = this.lru?.get(digest.toString('base64'));
    return known && { ...known, scopes: [...known.scopes] };
  }

  /** Remembers for `ttlMs` at most (what is left of the user record's own time). */
  set(digest: Buffer, identity: Identity, ttlMs: number): void {
    if (ttlMs <= 0) return;
    this.lru?.set(
      digest.toString('base64'),
      { ...identity, scopes: [...identity.scopes] },
      {
        ttl: ttlMs,
      },
    );
  }

  /** Drops every token of the user. */
  forget(userId: string): void {
    if (!this.lru) return;
    const gone: string[] = [];
    for (const [digest, identity] of this.lru.entries()) {
      if (identity.userId === userId) gone.push(digest);
    }
    for (const digest of gone) this.lru.delete(digest);
  }
}
