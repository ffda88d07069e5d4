import type { Phase } from '../app-event.js';
import type { Access, ShareLinkRecord } from '../persistence/store.js';

/** The spec's ShareLink (§2): never the password or its hash. */
export interface ShareLinkView {
  token: string;
  app_id: string;
  has_password: boolean;
  /** As requested; absent when the link never expires. */
  expires_in?: string;
  /** null when the link never expires. */
  expires_at: string | null;
  created_at: string;
  /** The public page of the link: `<base URL>/share/<token>`. */
  url: string;
}

/** What a visitor of the link sees (design.md §6): the app's name, phase and live URL. */
export interface ShareView {
  name: string;
  status: Phase;
  url: string;
  access: Access;
  /**
   * A private app only: the single-use address (valid about a minute) through the app's host that
   * lets this visitor in; the plain `url` answers 401 without it.
   */
  grant_url?: string;
}

export function shareLinkView(link: ShareLinkRecord, baseURL: string): ShareLinkView {
  const view: ShareLinkView = {
    token: link.token,
    app_id: link.appId,
    has_password: link.passwordHash !== undefined,
    expires_at: link.expiresAt ?? null,
    created_at: link.createdAt,
    url: `${baseURL.replace(/\/+$/, '')}/share/${link.token}`,
  };
  if (link.expiresIn !== undefined) view.expires_in = link.expiresIn;
  return view;
}
