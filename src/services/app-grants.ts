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
 * Access to a private app through a share link (design.md §6). Opening the link mints a code: 32
 * random bytes, good once, for one app, for `codeTtlMs`, kept in memory (a restart within that
 * minute asks the visitor to open the link again). The app's host redeems it for a grant, the
 * visitor's cookie: the app, the grant's end and a tag of its link, signed with a key of this
 * installation (kept in the store, so grants survive a restart and hold on every replica). It
 * never holds the link's token or password. Every check reads the link as stored now, so a
 * revoke, an expiry or the app's deletion voids the grant on the next request.
 */
export class AppGrants {
  private readonly codes = new Map<string, Code>();
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
    const payload: GrantPayload = {
      a: appId,
      l: this.tag(entry.token),
      e: expiresAt,
      n: randomBytes(9).toString('base64url'),
    };
    const body = Buffer.from(JSON.stringify(payload)).toString('base64url');
    const grant = `${body}.${this.sign(body)}`;
    return { grant, maxAgeSeconds: Math.max(1, Math.floor((expiresAt - now) / 1000)) };
  }

  /** True when `grant` opens `appId` now: signed by us, for this app, its link still live. */
  check(grant: string, appId: string): boolean {
    const payload = this.verify(grant);
    if (!payload || payload.a !== appId) return false;
    const now = this.now();
    if (payload.e <= now) return false;
    const link = this.store.listShareLinks(appId).find((l) => this.tag(l.token) === payload.l);
    const live = link && liveLink(this.store, link.token, now);
    return live !== undefined && live.app.id === appId;
  }

  /** Outstanding codes, for tests of the bound. */
  get size(): { codes: number } {
    return { codes: this.codes.size };
  }

  private verify(grant: string): GrantPayload | undefined {
    const [body, mac, extra] = grant.split('.');
    if (!body || !mac || extra !== undefined || body.length > 512) return undefined;
    const expected = Buffer.from(this.sign(body));
    const given = Buffer.from(mac);
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) return undefined;
    let value: unknown;
    try {
      value = JSON.parse(Buffer.from(body, 'base64url').toString('utf8'));
    } catch {
      return undefined; // signed by us, so never: but a cookie is not trusted for its shape
    }
    const p = value as Partial<GrantPayload>;
    return typeof p.a === 'string' && typeof p.l === 'string' && typeof p.e === 'number'
      ? (p as GrantPayload)
      : undefined;
  }

  private sign(body: string): string {
    return createHmac('sha256', this.grantKey()).update(`grant:${body}`).digest('base64url');
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

/** What a grant cookie carries: app, link tag, end (ms), and a nonce that makes each unique. */
interface GrantPayload {
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
  maxCodes: number;
}

export const DEFAULT_GRANT_LIMITS: GrantLimits = {
  codeTtlMs: 60_000,
  grantMaxMs: 24 * 60 * 60_000,
  maxCodes: 10_000,
};

interface Code {
  appId: string;
  token: string;
  expiresAt: number;
}
