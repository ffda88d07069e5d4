import type { Role } from '../persistence/store.js';

/** Who is calling: set on `request.identity` by the auth plugin for every authenticated request. */
export interface Identity {
  /** Canonical user ID: `apikey-<name>` for API keys, the subject for OIDC and proxy users. */
  userId: string;
  name: string;
  email?: string;
  role: Role;
  department?: string;
  /** Empty means unrestricted. */
  scopes: string[];
  /** The auth mode that authenticated the caller (`none` when auth is disabled). */
  mode: string;
}

export const isAdmin = (identity: Identity): boolean => identity.role === 'admin';
