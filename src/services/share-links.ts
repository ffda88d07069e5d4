import { requireScope } from './deploy-policy.js';
import { randomBytes } from 'node:crypto';
import { isAdmin, type Identity } from '../auth/identity.js';
import { AppError, notFound } from '../errors.js';
import type { AppRecord, ShareLinkRecord, Store } from '../persistence/store.js';
import type { AppService } from './app-service.js';
import { GuessLimiter } from './share-guesses.js';
import { hashPassword, MAX_PASSWORD_LENGTH, verifyPassword } from './share-password.js';
import { parseCreateInput } from './share-input.js';
import { shareLinkView, type ShareLinkView, type ShareView } from './share-view.js';
import { grantUrl, type AppGrants } from './app-grants.js';
import { expired, liveLink, TOKEN } from './share-live.js';

export type { ShareLinkView, ShareView } from './share-view.js';

/**
 * Share links (spec §2-§4, design.md §6): the one rule set behind the HTTP routes and the MCP
 * tools. Links live only in the durable store; the password is kept as a scrypt hash.
 */
export class ShareService {
  private readonly limiter: GuessLimiter;
  private readonly now: () => number;

  constructor(private readonly deps: ShareServiceDeps) {
    this.now = deps.now ?? Date.now;
    this.limiter = deps.limiter ?? new GuessLimiter(this.now);
  }

  /**
   * Owner only: another owner's app is 404, for admins too (unless auth is disabled). `input` is
   * validated here, whatever its static type says: callers pass request bodies and tool arguments.
   */
  async create(identity: Identity, appId: string, input?: unknown): Promise<ShareLinkView> {
    this.requireDurableStore();
    const owner = this.ownedApp(identity, appId).ownerId;
    requireScope(identity, 'deploy');
    const { password, expiresIn, expiresInMs } = parseCreateInput(input);
    const passwordHash = password === undefined ? undefined : await hashPassword(password, owner);
    // Checked again after the hash: the app may have been deleted (or replaced) meanwhile, and
    // from here to the insert nothing awaits, so no delete can slip in between.
    const app = this.ownedApp(identity, appId);
    const now = this.now();
    const link: ShareLinkRecord = {
      token: randomBytes(32).toString('hex'),
      appId: app.id,
      ownerId: app.ownerId,
      createdAt: new Date(now).toISOString(),
    };
    if (passwordHash !== undefined) link.passwordHash = passwordHash;
    if (expiresIn !== undefined && expiresInMs !== undefined) {
      link.expiresIn = expiresIn;
      link.expiresAt = new Date(now + expiresInMs).toISOString();
    }
    this.deps.store.addShareLink(link);
    return shareLinkView(link, this.deps.baseURL());
  }

  /**
   * Owner or admin: the app's usable links (not revoked, not expired), newest first; a page of
   * them when `limit` (0 or omitted: all) or `offset` is given. `total` counts them all.
   */
  list(
    identity: Identity,
    appId: string,
    page: { limit?: number; offset?: number } = {},
  ): { items: ShareLinkView[]; total: number } {
    this.requireDurableStore();
    const app = this.deps.apps.get(identity, appId);
    const now = this.now();
    const usable = this.deps.store.listShareLinks(app.id).filter((link) => !expired(link, now));
    const start = page.offset ?? 0;
    const end = page.limit ? start + page.limit : undefined;
    const items = usable.slice(start, end).map((link) => shareLinkView(link, this.deps.baseURL()));
    return { items, total: usable.length };
  }

  /** Owner or admin; any other caller, and a revoked or unknown link, gets 404. */
  revoke(identity: Identity, token: string): void {
    this.requireDurableStore();
    const link = TOKEN.test(token) ? this.deps.store.getShareLink(token) : undefined;
    if (!link || link.revokedAt !== undefined) throw notFound('share link');
    const app = this.deps.store.getApp(link.appId);
    if (!app || !(isAdmin(identity) || app.ownerId === identity.userId)) {
      throw notFound('share link');
    }
    requireScope(identity, 'deploy');
    if (!this.deps.store.revokeShareLink(token, new Date(this.now()).toISOString())) {
      throw notFound('share link');
    }
    this.limiter.forget(token);
  }

  /**
   * What a visitor without a password may learn: the app's view for an open link, only the fact
   * that a password is needed for a protected one. Expired, revoked or unknown links are 404.
   */
  peek(token: string): { kind: 'open'; view: ShareView } | { kind: 'protected'; name: string } {
    const { link, app } = this.activeLink(token);
    // The name only (the holder of the link was told which app it opens; it is its subdomain too).
    if (link.passwordHash !== undefined) return { kind: 'protected', name: app.name };
    // No code: the page sends a private app's visitor through `/share/<token>/open`, which mints
    // one when it is clicked, not when the page was drawn.
    return { kind: 'open', view: baseView(app) };
  }

  /**
   * Where `/share/<token>/open` sends the visitor of an open link: through the app's host with a
   * fresh code for a private app, straight to it for a public one; undefined while the app has no
   * URL yet. A protected link needs its password first: 401 `password_required`.
   */
  open(token: string): string | undefined {
    const { link, app } = this.activeLink(token);
    if (link.passwordHash !== undefined) throw passwordRequired();
    const view = this.viewOf(link, app);
    return view.grant_url ?? (view.url || undefined);
  }

  /**
   * Public resolve: GET passes no password, POST the one supplied (ignored on an open link).
   * `client` is the caller's address: wrong guesses are counted per link and address.
   */
  async resolve(token: string, password?: string, client = 'unknown'): Promise<ShareView> {
    const { link, app } = this.activeLink(token);
    if (link.passwordHash === undefined) return this.viewOf(link, app);
    if (password === undefined || password === '') throw passwordRequired();
    // No password this long was ever accepted: refuse it before it costs a hash or a guess.
    if (password.length > MAX_PASSWORD_LENGTH) {
      throw new AppError(401, 'invalid_password', 'wrong password for this share link');
    }
    const attempt = await this.limiter.begin(token, client);
    let ok: boolean;
    try {
      // The link owner's turn in the hashing queue: guesses at one tenant's links wait there.
      ok = await verifyPassword(password, link.passwordHash, link.ownerId);
    } catch (err) {
      // Never checked (the queue was full): not a wrong guess.
      if (err instanceof AppError && err.status === 429) attempt.abandon();
      else attempt.failed();
      throw err;
    }
    if (ok) attempt.succeeded();
    else attempt.failed();
    if (!ok) throw new AppError(401, 'invalid_password', 'wrong password for this share link');
    // The link may have been revoked or the app deleted while the hash was computed.
    const now = this.activeLink(token);
    return this.viewOf(now.link, now.app);
  }

  private activeLink(token: string): { link: ShareLinkRecord; app: AppRecord } {
    this.requireDurableStore();
    const live = liveLink(this.deps.store, token, this.now());
    if (!live) throw notFound('share link');
    return live;
  }

  /**
   * What a visitor of the link sees. A private app's view carries a fresh single-use `grant_url`
   * through the app's host (app-grants.ts): opening it is what lets the visitor in.
   */
  private viewOf(link: ShareLinkRecord, app: AppRecord): ShareView {
    const view = baseView(app);
    if (view.access === 'private' && app.url) {
      view.grant_url = grantUrl(app.url, this.deps.grants.issueCode(link));
    }
    return view;
  }

  /** The app if the caller owns it; auth disabled skips ownership, as everywhere. */
  private ownedApp(identity: Identity, appId: string): AppRecord {
    const app = this.deps.apps.get(identity, appId);
    if (identity.mode !== 'none' && app.ownerId !== identity.userId) throw notFound('app');
    return app;
  }

  private requireDurableStore(): void {
    if (this.deps.store.backend === 'sqlite') return;
    throw new AppError(
      503,
      'share_links_unavailable',
      `share links need store.backend: sqlite (this server runs store.backend: ${this.deps.store.backend})`,
    );
  }
}

export interface ShareServiceDeps {
  store: Store;
  apps: Pick<AppService, 'get'>;
  /** `server.baseURL` when set, else the base URL the server runs at. */
  baseURL: () => string;
  /** Mints the codes that let a private app's visitors in. */
  grants: Pick<AppGrants, 'issueCode'>;
  limiter?: GuessLimiter;
  now?: () => number;
}

const passwordRequired = (): AppError =>
  new AppError(
    401,
    'password_required',
    'this share link needs a password: POST {"password": "..."} to this URL',
  );

const baseView = (app: AppRecord): ShareView => ({
  name: app.name,
  status: app.phase,
  url: app.url ?? '',
  access: app.access ?? 'public',
});
