import { badRequest } from '../errors.js';

/**
 * The bodies are optional (POST without one creates an open link, or resolves an open link), and
 * fastify validates an absent body against a body schema too, so they are read by hand.
 */
export function passwordOf(body: unknown): string | undefined {
  if (body === undefined || body === null) return undefined;
  if (typeof body !== 'object' || Array.isArray(body)) {
    throw badRequest('the body must be a JSON object {"password": "..."}');
  }
  const password = 'password' in body ? body.password : undefined;
  if (password === undefined || password === null) return undefined;
  if (typeof password !== 'string') throw badRequest('password must be a string');
  return password;
}
