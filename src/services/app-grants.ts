import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { ShareLinkRecord, Store } from '../persistence/store.js';
import { liveLink } from './share-live.js';
import type { Log } from '../logging.js';

/** Where a private app's host takes a code (`?code=`); the app never sees this path. */
export const GRANT_PATH = '/__slipway/access';

/** The address that spends `code` on the app at `appUrl`. */
export const grantUrl = (appUrl: string, code: string): string =>
  `${appUrl.replace(/\/+$/, '')}${GRANT_PATH}?code=${code}`;

/**
 * Access to a private app through a share link (design.md §6). Opening the link mints a code: the
 * app, a tag of its link, its end (`codeTtlMs`) and a nonce, signed with a key of this
 * installation (kept in the store), good once. The app's host redeems it for a grant, the
 * visitor's cookie: the app, the grant's end and the link's tag, signed the same way. Neither
 * holds the link's token or password, and both survive a restart: the key is stored, and so are
 * the nonces of codes spent within their minute, so a code is never good twice. Every check reads
 * the link as stored now, so a revoke, an expiry or the app's deletion voids a code or a grant on
 * the next request.
 */
export class AppGrants {
  /** Nonces of spent codes that have not expired yet, with their ends (the stored list's mirror). */
  private spent: Map<string, number> | undefined;
  private readonly limits: GrantLimits;
  private readonly now: () => number;
  private key: Buffer | undefined;
  private readonly log: Log;

  constructor(
    private readonly store: Store,
    options: {
      limits?: Partial<GrantLimits>;
      now?: () => number;
      log?: Log;
    } = {},
  ) {
    this.limits = { ...DEFAULT_GRANT_LIMITS, ...options.limits };
    this.now = options.now ?? Date.now;
    this.log = options.log ?? (() => undefined);
  }

  /** A fresh single-use code for the link's app; the caller has just checked the link. */
  issueCode(link: ShareLinkRecord): string {
    return this.seal('code', {
      a: link.appId,
      l: this.tag(link.token),
      e: this.now() + this.limits.codeTtlMs,
      n: randomBytes(12).toString('base64url'),
    });
  }

  /**
   * Spends `code` on `appId`'s host: a new grant and its lifetime in seconds, or undefined when the
   * code is not ours, spent, expired or for another app, or its link no longer works.
   */
  redeem(code: string, appId: string): { grant: string; maxAgeSeconds: number } | undefined {
    const payload = this.open('code', code);
    const now = this.now();
    if (!payload || payload.e <= now || !this.spend(payload.n, payload.e, now)) return undefined;
    const live = payload.a === appId ? this.liveByTag(appId, payload.l, now) : undefined;
    if (!live) return undefined;
    const linkEnd = live.link.expiresAt === undefined ? Infinity : Date.parse(live.link.expiresAt);
    const expiresAt = Math.min(linkEnd, now + this.limits.grantMaxMs);
    const grant = this.seal('grant', {
      a: appId,
      l: payload.l,
      e: expiresAt,
      n: randomBytes(9).toString('base64url'),
    });
    return { grant, maxAgeSeconds: Math.max(1, Math.floor((expiresAt - now) / 1000)) };
  }

  /** True when `grant` opens `appId` now: signed by us, for this app, its link still live. */
  check(grant: string, appId: string): boolean {
    const payload = this.open('grant', grant);
    const now = this.now();
    if (!payload || payload.a !== appId || payload.e <= now) return false;
    return this.liveByTag(appId, payload.l, now) !== undefined;
  }

  /** The app's live link whose tag is `tag`, if it still works. */
  private liveByTag(appId: string, tag: string, now: number): ReturnType<typeof liveLink> {
    const link = this.store.listShareLinks(appId).find((l) => this.tag(l.token) === tag);
    const live = link && liveLink(this.store, link.token, now);
    return live?.app.id === appId ? live : undefined;
  }

  /**
   * Marks a code's nonce spent, in the store first: false when it was spent already, or when it
   * cannot be remembered (too many spent within their minute, or the store refused), since a code
   * that might be taken again after a restart is not good once.
   */
  private spend(nonce: string, end: number, now: number): boolean {
    const spent = this.spentCodes();
    if (spent.has(nonce)) return false;
    for (const [n, e] of spent) if (e <= now) spent.delete(n);
    if (spent.size >= this.limits.maxCodes) {
      this.log('warn', 'a share code was refused: too many spent within their minute', {
        spent: spent.size,
      });
      return false;
    }
    spent.set(nonce, end);
    try {
      this.store.setMeta(SPENT_CODES, JSON.stringify([...spent]));
    } catch (err) {
      this.log('warn', 'a share code was refused: its use could not be stored', {
        err: String(err),
      });
      return false;
    }
    return true;
  }

  private spentCodes(): Map<string, number> {
    if (this.spent) return this.spent;
    this.spent = new Map();
    const stored = this.store.getMeta(SPENT_CODES);
    if (!stored) return this.spent;
    try {
      const entries: unknown = JSON.parse(stored);
      if (!Array.isArray(entries)) throw new TypeError('not a list');
      for (const entry of entries as unknown[]) {
        if (!Array.isArray(entry)) continue;
        const [n, e] = entry as unknown[];
        if (typeof n === 'string' && typeof e === 'number') this.spent.set(n, e);
      }
    } catch (err) {
      // Only this process writes it; a damaged list costs at most a minute of codes a second use.
      this.log('warn', 'the spent share codes could not be read', { err: String(err) });
    }
    return this.spent;
  }

  private seal(kind: 'code' | 'grant', payload: SealedPayload): string {
    const body = Buffer.from(JSON.stringify(payload)).toString('base64url');
    return `${body}.${this.sign(kind, body)}`;
  }

  /** A code's or grant's payload, when it is ours, of that kind, and of the right shape. */
  private open(kind: 'code' | 'grant', sealed: string): SealedPayload | undefined {
    const [body, mac, extra] = sealed.split('.');
    if (!body || !mac || extra !== undefined || body.length > 512) return undefined;
    const expected = Buffer.from(this.sign(kind, body));
    const given = Buffer.from(mac);
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) return undefined;
    let value: unknown;
    try {
      value = JSON.parse(Buffer.from(body, 'base64url').toString('utf8'));
    } catch {
      return undefined; // signed by us, so never: but a cookie is not trusted for its shape
    }
    const p = value as Partial<SealedPayload>;
    return typeof p.a === 'string' &&
      typeof p.l === 'string' &&
      typeof p.e === 'number' &&
      typeof p.n === 'string'
      ? (p as SealedPayload)
      : undefined;
  }

  private sign(kind: 'code' | 'grant', body: string): string {
    return createHmac('sha256', this.grantKey()).update(`${kind}:${body}`).digest('base64url');
  }

  /** A link's tag in a grant: names the link to us, and its token to no one. */
  private tag(token: string): string {
    return createHmac('sha256', this.grantKey())
      .update(`link:${token}`)
      .digest('base64url')
      .slice(0, 22);
  }

  /** The installation's grant key, made once and kept in the store. */
  private grantKey(): Buffer {
    if (this.key) return this.key;
    const stored = this.store.getMeta(GRANT_KEY);
    if (stored) return (this.key = Buffer.from(stored, 'hex'));
    const fresh = randomBytes(32);
    try {
      this.store.setMeta(GRANT_KEY, fresh.toString('hex'));
    } catch (err) {
      // Grants then hold until this process ends: visitors open their link again after a restart.
      this.log('warn', 'the grant key could not be stored', { err: String(err) });
    }
    return (this.key = fresh);
  }
}

const GRANT_KEY = 'share_grant_key';
const SPENT_CODES = 'share_spent_codes';

/** What a code or a grant carries: app, link tag, end (ms), and a nonce that makes each unique. */
interface SealedPayload {
  a: string;
  l: string;
  e: number;
  n: string;
}

export interface GrantLimits {
  /** How long a code may wait between the share link and the app's host. */
  codeTtlMs: number;
  /** The longest a grant lives, for links that never expire: then the link is opened again. */
  grantMaxMs: number;
  /** Codes spent within their minute that are remembered; past it, codes are refused. */
  maxCodes: number;
}

export const DEFAULT_GRANT_LIMITS: GrantLimits = {
  codeTtlMs: 60_000,
  grantMaxMs: 24 * 60 * 60_000,
  maxCodes: 10_000,
};
