import { randomBytes } from 'node:crypto';
import { badRequest } from '../errors.js';

/**
 * Source blob keys `<app_id>.v<version>.<32 hex>` (spec §2): 128 random bits, so possessing a key
 * is the authorization to fetch its blob. Minted at deploy and stored, never re-derived.
 */
export function mintSourceKey(appId: string, version: number): string {
  if (!APP_ID.test(appId)) throw badRequest(`invalid app id ${JSON.stringify(appId)}`);
  if (!Number.isSafeInteger(version) || version < 0) {
    throw badRequest(`invalid version ${String(version)}`);
  }
  return `${appId}.v${version}.${randomBytes(16).toString('hex')}`;
}

/** Strict: the whole string, lowercase hex, no leading zeros on the version, app id ≤ 63 chars. */
export function isSourceKey(value: string): boolean {
  return SOURCE_KEY.test(value);
}

// Same as the metadata name pattern; the {0,61} keeps the whole id within 63 characters.
const APP_ID_SOURCE = '[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?';
const APP_ID = new RegExp(`^${APP_ID_SOURCE}$`);
const SOURCE_KEY = new RegExp(`^${APP_ID_SOURCE}\\.v(?:0|[1-9][0-9]{0,15})\\.[0-9a-f]{32}$`);
