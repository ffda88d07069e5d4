import type { AppRecord, ShareLinkRecord, Store } from '../persistence/store.js';

/**
 * A share link as it stands now, with its app: undefined when the link is unknown, revoked or
 * expired, or its app is gone. The one rule behind resolving a link and honouring the grants it
 * handed out (app-grants.ts), so a revoke or an expiry ends both at the same moment.
 */
export function liveLink(
  store: Store,
  token: string,
  now: number,
): { link: ShareLinkRecord; app: AppRecord } | undefined {
  const link = TOKEN.test(token) ? store.getShareLink(token) : undefined;
  const app = link && store.getApp(link.appId);
  const gone =
    !link ||
    !app ||
    link.revokedAt !== undefined ||
    expired(link, now) ||
    // Deleting an app deletes its links; this also holds for a row that somehow survived:
    // an app created later under the same name (or by another owner) never inherits it.
    app.ownerId !== link.ownerId ||
    app.createdAt > link.createdAt;
  return gone ? undefined : { link, app };
}

/** 32 random bytes, hex: anything else cannot be a token, so it is not looked up. */
export const TOKEN = /^[0-9a-f]{64}$/;

export const expired = (link: ShareLinkRecord, now: number): boolean =>
  link.expiresAt !== undefined && Date.parse(link.expiresAt) <= now;
