import type { Activity } from './activity.js';
import { CliError, EXIT, apiError, parseErrorBody } from './errors.js';
import type { Credentials } from './credentials.js';
import type { AppView as ServerAppView } from '../services/app-view.js';

/** JSON calls to the API with the caller's key; every failure becomes a CliError. */
export class ApiClient {
  constructor(readonly creds: Credentials) {}

  get baseURL(): string {
    return this.creds.url;
  }

  /**
   * With the key when there is one. `X-Requested-With` always: a server with auth disabled takes
   * a change only from a request no web form could have sent (its defence against forgery).
   */
  headers(extra: Record<string, string> = {}): Record<string, string> {
    const ours = { 'x-requested-with': 'slipway-cli', ...extra };
    return this.creds.token ? { authorization: `Bearer ${this.creds.token}`, ...ours } : ours;
  }

  /** A JSON request; `undefined` for an empty answer (204). */
  async call<T>(method: string, path: string, body?: unknown): Promise<T> {
    const res = await this.send(path, {
      method,
      headers: this.headers(body === undefined ? {} : { 'content-type': 'application/json' }),
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await res.text();
    if (!res.ok) throw this.failure(res.status, text);
    if (!text) return undefined as T;
    try {
      return JSON.parse(text) as T;
    } catch {
      // A proxy's or another site's page where the API should answer: the URL is the likely cause.
      throw new CliError(
        EXIT.api,
        'not_json',
        `${this.creds.url}${path} answered ${res.status} with something other than JSON`,
        'check that the URL is the Slipway server (slipway whoami shows it)',
      );
    }
  }

  /** An open streaming answer (SSE), or the server's error. */
  async stream(path: string, signal?: AbortSignal): Promise<Response> {
    const res = await this.send(path, {
      headers: this.headers({ accept: 'text/event-stream' }),
      ...(signal ? { signal } : {}),
    });
    if (!res.ok) throw this.failure(res.status, await res.text());
    return res;
  }

  failure(status: number, text: string): CliError {
    const hint =
      status === 401 && this.creds.from === 'env'
        ? 'check SLIPWAY_TOKEN, or unset it and run slipway login'
        : undefined;
    return apiError(status, parseErrorBody(status, text), hint);
  }

  private async send(path: string, init: RequestInit): Promise<Response> {
    try {
      return await fetch(`${this.creds.url}${path}`, init);
    } catch (err) {
      if (init.signal?.aborted) throw err;
      throw unreachable(this.creds.url, err);
    }
  }
}

export function unreachable(url: string, err: unknown): CliError {
  const cause = (err as { cause?: { code?: string; message?: string } }).cause;
  const why = cause?.code ?? cause?.message ?? (err as Error).message;
  return new CliError(
    EXIT.api,
    'unreachable',
    `cannot reach ${url} (${why})`,
    'check that the server runs and the URL is right (slipway login, or SLIPWAY_URL)',
  );
}

/**
 * An app as GET /v1/apps/{id} shows it (api/openapi.yaml `App`), as the server types it, with
 * what a server may add while a deploy is in flight (issue 29): older servers leave it out.
 */
export type AppView = ServerAppView & {
  status_url?: string;
  activity?: Activity;
  poll_after_seconds?: number;
};

export const appPath = (app: string): string => `/v1/apps/${encodeURIComponent(app)}`;
