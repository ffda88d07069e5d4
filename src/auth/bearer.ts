import { sha256 } from './keys.js';
import { unauthenticated } from '../errors.js';

/** Longest Authorization header we read; anything longer is refused before any parsing or hashing. */
export const MAX_AUTHORIZATION_LENGTH = 8192;

/**
 * The token of an `Authorization: Bearer <token>` header, or a 401 `unauthenticated` AppError for a
 * missing header, another scheme, an empty or malformed token, or an overlong header. The message
 * never echoes the header: it may hold a secret.
 */
export function parseBearer(header: string | string[] | undefined): string {
  if (header === undefined || header === '') throw unauthenticated('missing bearer token');
  if (Array.isArray(header)) throw unauthenticated('more than one Authorization header');
  if (header.length > MAX_AUTHORIZATION_LENGTH)
    throw unauthenticated('Authorization header is too long');
  const match = /^Bearer +(\S+) *$/i.exec(header);
  if (!match) throw unauthenticated('Authorization must use the Bearer scheme');
  const token = match[1] as string;
  // Visible ASCII only: keys and JWTs never hold anything else, and it keeps hashing well defined.
  if (!/^[\x21-\x7e]+$/.test(token)) throw unauthenticated('malformed bearer token');
  return token;
}

/** A request's bearer token, read and hashed at most once however many checks ask for it. */
export interface BearerCredential {
  /** The token; throws as `parseBearer` does. */
  bearer(): string;
  /** The token's sha256: what keys are compared and remembered by. Throws as `bearer`. */
  digest(): Buffer;
}

export function bearerCredential(header: string | string[] | undefined): BearerCredential {
  let token: string | undefined;
  let digest: Buffer | undefined;
  const bearer = (): string => (token ??= parseBearer(header));
  return { bearer, digest: () => (digest ??= sha256(bearer())) };
}
