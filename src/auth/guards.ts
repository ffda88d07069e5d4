import type { FastifyRequest } from 'fastify';
import { forbidden, unauthenticated } from '../errors.js';
import { isAdmin, type Identity } from './identity.js';
import '../http/types.js';

/** The caller's identity; a handler on a protected path always has one (the auth hook ran). */
export function requireIdentity(request: FastifyRequest): Identity {
  if (!request.identity) throw unauthenticated();
  return request.identity;
}

/** The caller's identity when it has the admin role; otherwise 403 `forbidden`. */
export function requireAdmin(request: FastifyRequest): Identity {
  const identity = requireIdentity(request);
  if (!isAdmin(identity)) throw forbidden();
  return identity;
}

/** A preHandler hook for route plugins that are admin-only as a whole. */
export async function adminOnly(request: FastifyRequest): Promise<void> {
  requireAdmin(request);
}
