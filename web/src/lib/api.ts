import { currentToken } from './session';

/** The API's error body `{code, message, details?}`, or what a failed request left. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details?: Record<string, unknown>,
  ) {
    super(message);
  }
}

let unauthenticated: () => void = () => undefined;

/** Called when a request answers 401 after sign-in: the key was revoked or the token expired. */
export function onUnauthenticated(handler: () => void): void {
  unauthenticated = handler;
}

export function authHeaders(): Record<string, string> {
  const token = currentToken();
  return token ? { authorization: `Bearer ${token}` } : {};
}

/** JSON request to the API with this tab's bearer; a non-2xx answer throws an ApiError. */
export async function api<T>(
  path: string,
  init: RequestInit & { json?: unknown } = {},
): Promise<T> {
  const headers: Record<string, string> = { ...authHeaders(), accept: 'application/json' };
  let body = init.body;
  if (init.json !== undefined) {
    headers['content-type'] = 'application/json';
    body = JSON.stringify(init.json);
  }
  const res = await fetch(path, { ...init, headers, body, credentials: 'same-origin' });
  if (res.status === 204) return undefined as T;
  const text = await res.text();
  const parsed: unknown = text ? safeJson(text) : undefined;
  if (!res.ok) throw errorOf(res.status, parsed);
  return parsed as T;
}

export function errorOf(status: number, body: unknown): ApiError {
  const error = body as { code?: string; message?: string; details?: object } | undefined;
  if (status === 401) unauthenticated();
  return new ApiError(
    status,
    error?.code ?? `http_${status}`,
    error?.message ?? `the server answered ${status}`,
    error?.details as Record<string, unknown> | undefined,
  );
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch (err) {
    // A proxy's HTML error page: keep its status, note the body was not the API's.
    return { code: 'bad_response', message: `not JSON: ${String(err)}` };
  }
}

export const errorText = (err: unknown): string =>
  err instanceof Error ? err.message : String(err);
