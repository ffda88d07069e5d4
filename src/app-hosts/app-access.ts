import type { IncomingMessage } from 'node:http';
import { isAdmin, type Identity } from '../auth/identity.js';
import type { AppRecord, Store } from '../persistence/store.js';
import { GRANT_PATH, type AppGrants } from '../services/app-grants.js';

/** Why a private app's host refused a request: no grant, or a share code that does not open it. */
export type Refusal = 'private' | 'code';

/** What the app router does with a request for an app's host (see `AppAccess.admit`). */
export type Admission =
  | { kind: 'pass' }
  /** `backend`: the store's, which decides whether share links (and so visitors) exist here. */
  | { kind: 'refuse'; why: Refusal; backend: Store['backend'] }
  /** A code was spent: set this cookie and send the visitor to the app's front page. */
  | { kind: 'granted'; cookie: string };

export type IdentifyMessage = (message: IncomingMessage) => Promise<Identity | undefined>;
export type RecogniseBearer = (message: IncomingMessage) => Promise<boolean>;

/**
 * Who may reach an app's sandbox. A public app: anyone, as always. A private one: the owner's or an
 * admin's bearer token, or the cookie of a grant a share link handed out (app-grants.ts); the
 * grant is checked against its link on every request. Whatever the app, no Slipway credential
 * reaches it: the access cookies and a bearer token that is Slipway's are cut from every request.
 * An app's own Authorization (a token Slipway does not know) passes untouched.
 */
export class AppAccess {
  private identify: IdentifyMessage = async () => undefined;
  private recognise: RecogniseBearer = async () => false;

  constructor(
    private readonly store: Store,
    private readonly grants: AppGrants,
  ) {}

  /** How a raw request's credential is read; set once the auth plugin is up (start.ts). */
  identifyWith(identify: IdentifyMessage, recognise: RecogniseBearer): void {
    this.identify = identify;
    this.recognise = recognise;
  }

  /** Decides, and edits `req.headers` so that what is forwarded carries no grant. */
  async admit(name: string, req: IncomingMessage): Promise<Admission> {
    const app = this.store.getApp(name);
    const secure = isSecure(req, app);
    const grants = takeAccessCookies(req, cookieName(name, secure));
    if (!app || (app.access ?? 'public') === 'public') {
      await this.cutSlipwayBearer(req);
      return PASS;
    }
    const { backend } = this.store;
    const granted = grants.some((grant) => this.grants.check(grant, app.id));
    if ((req.url ?? '/').split('?')[0] === GRANT_PATH) {
      const code = new URL(req.url ?? '/', 'http://app').searchParams.get('code') ?? '';
      const spent = req.method === 'GET' ? this.grants.redeem(code, app.id) : undefined;
      if (spent) return { kind: 'granted', cookie: setCookie(name, secure, spent) };
      // A reload of a spent link by a visitor already let in: nothing to refuse.
      if (granted) return { kind: 'granted', cookie: '' };
      return { kind: 'refuse', why: 'code', backend };
    }
    const bearer = /^bearer /i.test(req.headers.authorization ?? '');
    const identity = granted && !bearer ? undefined : await this.identify(req);
    // A Slipway credential is for Slipway: the app is not to see (or replay) it.
    if (identity && identity.mode !== 'none' && bearer) delete req.headers.authorization;
    if (granted || (identity && (isAdmin(identity) || identity.userId === app.ownerId))) {
      // A grant let the visitor in: a Slipway key that identified no one (a suspended user's)
      // still stays here.
      await this.cutSlipwayBearer(req);
      return PASS;
    }
    return { kind: 'refuse', why: 'private', backend };
  }

  /** Whoever the visitor is, their Slipway key is not the app's to see (or to replay). */
  private async cutSlipwayBearer(req: IncomingMessage): Promise<void> {
    if (!/^bearer /i.test(req.headers.authorization ?? '')) return;
    if (await this.recognise(req)) delete req.headers.authorization;
  }
}

const PASS: Admission = { kind: 'pass' };

/**
 * One cookie name per app: a browser sends it only to the host that set it (no Domain attribute),
 * and the grant it holds is bound to the app on the server too. Under TLS the `__Host-` prefix
 * makes browsers refuse it from anywhere but this host, over anything but HTTPS.
 */
export function cookieName(app: string, secure: boolean): string {
  return `${secure ? '__Host-' : ''}${COOKIE_PREFIX}${app}`;
}

const COOKIE_PREFIX = 'slipway_access_';

function setCookie(
  app: string,
  secure: boolean,
  spent: { grant: string; maxAgeSeconds: number },
): string {
  const attributes = [`Max-Age=${spent.maxAgeSeconds}`, 'Path=/', 'HttpOnly', 'SameSite=Lax'];
  if (secure) attributes.push('Secure');
  return `${cookieName(app, secure)}=${spent.grant}; ${attributes.join('; ')}`;
}

/** TLS on this connection, or an https app URL (TLS ended by a proxy in front of Slipway). */
function isSecure(req: IncomingMessage, app: AppRecord | undefined): boolean {
  return 'encrypted' in req.socket || (app?.url?.startsWith('https:') ?? false);
}

/**
 * The values of the `name` cookie, and every Slipway access cookie cut out of the Cookie header:
 * an app sees none, even one a visitor carries from another app or from before it went public.
 */
function takeAccessCookies(req: IncomingMessage, name: string): string[] {
  const header = req.headers.cookie;
  if (header === undefined || !header.includes(COOKIE_PREFIX)) return [];
  const values: string[] = [];
  const kept: string[] = [];
  for (const pair of header.split(';')) {
    const at = pair.indexOf('=');
    const key = (at < 0 ? pair : pair.slice(0, at)).trim();
    if (!key.includes(COOKIE_PREFIX)) {
      if (pair.trim() !== '') kept.push(pair.trim());
    } else if (key === name) {
      values.push(pair.slice(at + 1).trim());
    }
  }
  if (kept.length > 0) req.headers.cookie = kept.join('; ');
  else delete req.headers.cookie;
  return values;
}
