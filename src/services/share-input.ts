import { formatDuration, parseDurationNanos } from '../config/duration.js';
import { AppError, badRequest } from '../errors.js';
import { MAX_PASSWORD_LENGTH } from './share-password.js';

export interface ParsedCreateInput {
  password?: string;
  expiresIn?: string;
  expiresInMs?: number;
}

/**
 * The body of a share-link creation, `{password?, expires_in?}`, from HTTP or an MCP tool
 * (validated here for both). `expires_in` is a Go duration (`300ms`, `1.5h`, `2h45m`); empty or
 * absent, the link never expires.
 */
export function parseCreateInput(input: unknown): ParsedCreateInput {
  if (input === undefined || input === null) return {};
  if (typeof input !== 'object' || Array.isArray(input)) {
    throw badRequest('the body must be a JSON object {password?, expires_in?}');
  }
  const { password, expires_in: expiresIn } = input as Record<string, unknown>;
  const parsed: ParsedCreateInput = {};
  if (password !== undefined && password !== null) {
    if (typeof password !== 'string') throw badRequest('password must be a string');
    // An empty password would protect nothing; omitting it is how a link is made public.
    if (password === '') throw badRequest('password must not be empty; omit it for an open link');
    if (password.length > MAX_PASSWORD_LENGTH) {
      throw badRequest(`password must be at most ${MAX_PASSWORD_LENGTH} characters`);
    }
    parsed.password = password;
  }
  if (expiresIn !== undefined && expiresIn !== null && expiresIn !== '') {
    if (typeof expiresIn !== 'string') throw badExpiresIn('expires_in must be a string', expiresIn);
    parsed.expiresIn = expiresIn;
    parsed.expiresInMs = expiresInMs(expiresIn);
  }
  return parsed;
}

/** Exactly Go's time.ParseDuration, and positive: a link that is born expired is a mistake. */
function expiresInMs(text: string): number {
  const nanos = parseDurationNanos(text);
  if (nanos === undefined) {
    throw badExpiresIn(
      `expires_in "${text}" is not a Go duration: use e.g. 300ms, 30m, 1.5h or 2h45m ` +
        '(units ns, us, ms, s, m, h; there is no d)',
      text,
    );
  }
  if (nanos <= 0n) {
    throw badExpiresIn(
      `expires_in must be positive, got ${formatDuration(Number(nanos) / 1e6)}; ` +
        'omit it for a link that never expires',
      text,
    );
  }
  return Number(nanos) / 1e6;
}

const badExpiresIn = (message: string, value: unknown): AppError =>
  new AppError(400, 'bad_expires_in', message, { expires_in: value });
