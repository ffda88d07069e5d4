import { randomBytes } from 'node:crypto';
import type { ShareLinkRecord, Store } from '../persistence/store.js';
import { liveLink } from './share-live.js';

/** Where a private app's host takes a code (`?code=`); the app never sees this path. */
export const GRANT_PATH = '/__slipway/access';

/** The address that spends `code` on the app at `appUrl`. */
export const grantUrl = (appUrl: string, code: string): string =>
  `${appUrl.replace(/\/+$/, '')}${GRANT_PATH}?code=${code}`;

/**
 * Access to a private app through a share link (design.md §6). Opening the link mints a code: 32
 * random bytes, good once, for one app, for `codeTtlMs`. The app's host redeems it for a grant,
 * whose id is the visitor's cookie: never the link's token or password. A grant lives no longer
 * than its link, and every check reads the link as stored now, so a revoke, an expiry or the app's
 * deletion voids it on the next request. Both live only in memory (a restart asks visitors to open
 * their link again) and are bounded: the oldest go first.
 */
export class AppGrants {
  private readonly codes = new Map<string, Code>();
  private readonly grants = new Map<string, Grant>();
  /** Grant ids per link, oldest first: one link's visitors cannot crowd out everyone else's. */
  private readonly byLink = new Map<string, Set<string>>();
  private readonly limits: GrantLimits;
  private readonly now: () => number;

  constructor(
    private readonly store: Store,
    options: { limits?: Partial<GrantLimits>; now?: () => number } = {},
  ) {
    this.limits = { ...DEFAULT_GRANT_LIMITS, ...options.limits };
    this.now = options.now ?? Date.now;
  }

  /** A fresh single-use code for the link's app; the caller has just checked the link. */
  issueCode(link: ShareLinkRecord): string {
    const now = this.now();
    for (const [code, entry] of this.codes) {
      if (entry.expiresAt > now && this.codes.size < this.limits.maxCodes) break;
      this.codes.delete(code);
    }
    const code = randomBytes(32).toString('base64url');
    this.codes.set(code, {
      appId: link.appId,
      token: link.token,
      expiresAt: now + this.limits.codeTtlMs,
    });
    return code;
  }

  /**
   * Spends `code` on `appId`'s host: a new grant and its lifetime in seconds, or undefined when the
   * code is unknown, used, expired or for another app, or its link no longer works.
   */
  redeem(code: string, appId: string): { grant: string; maxAgeSeconds: number } | undefined {
    const entry = this.codes.get(code);
    if (!entry) return undefined;
    this.codes.delete(code);
    const now = this.now();
    if (entry.appId !== appId || entry.expiresAt <= now) return undefined;
    const live = liveLink(this.store, entry.token, now);
    if (!live || live.app.id !== appId) return undefined;
    const linkEnd = live.link.expiresAt === undefined ? Infinity : Date.parse(live.link.expiresAt);
    const expiresAt = Math.min(linkEnd, now + this.limits.grantMaxMs);
    const grant = randomBytes(32).toString('base64url');
    this.add(grant, { appId, token: entry.token, expiresAt });
    return { grant, maxAgeSeconds: Math.max(1, Math.floor((expiresAt - now) / 1000)) };
  }

  /** True when `grant` opens `appId` now; a grant its link no longer backs is dropped. */
  check(grant: string, appId: string): boolean {
    const entry = this.grants.get(grant);
    if (!entry || entry.appId !== appId) return false;
    const now = this.now();
    const live = entry.expiresAt > now ? liveLink(this.store, entry.token, now) : undefined;
    if (live && live.app.id === appId) return true;
    this.remove(grant, entry);
    return false;
  }

  /** Outstanding codes and grants, for tests of the bounds. */
  get size(): { codes: number; grants: number } {
    return { codes: this.codes.size, grants: this.grants.size };
  }

  private add(id: string, grant: Grant): void {
    const ofLink = this.byLink.get(grant.token) ?? new Set<string>();
    this.byLink.set(grant.token, ofLink);
    if (ofLink.size >= this.limits.maxGrantsPerLink) this.evictFirst(ofLink);
    if (this.grants.size >= this.limits.maxGrants) this.evictFirst(this.grants.keys());
    this.grants.set(id, grant);
    ofLink.add(id);
  }

  private evictFirst(ids: Iterable<string>): void {
    for (const id of ids) {
      const entry = this.grants.get(id);
      if (entry) this.remove(id, entry);
      return;
    }
  }

  private remove(id: string, grant: Grant): void {
    this.grants.delete(id);
    const ofLink = this.byLink.get(grant.token);
    ofLink?.delete(id);
    if (ofLink?.size === 0) this.byLink.delete(grant.token);
  }
}

export interface GrantLimits {
  /** How long a code may wait between the share link and the app's host. */
  codeTtlMs: number;
  /** The longest a grant lives, for links that never expire: then the link is opened again. */
  grantMaxMs: number;
  maxCodes: number;
  maxGrants: number;
  maxGrantsPerLink: number;
}

export const DEFAULT_GRANT_LIMITS: GrantLimits = {
  codeTtlMs: 60_000,
  grantMaxMs: 24 * 60 * 60_000,
  maxCodes: 10_000,
  maxGrants: 20_000,
  maxGrantsPerLink: 2_000,
};

interface Code {
  appId: string;
  token: string;
  expiresAt: number;
}

interface Grant {
  appId: string;
  /** The share link that granted it: its state decides, on every request. */
  token: string;
  expiresAt: number;
}
