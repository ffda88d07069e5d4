/**
 * Exit codes scripts can rely on (README "CLI"): 0 done, 1 the server or the network refused,
 * 2 the command line was wrong, 3 no credentials or the server rejected them.
 */
export const EXIT = { ok: 0, api: 1, usage: 2, auth: 3 } as const;

/** An error the CLI explains in one line plus a next step, never with a stack trace. */
export class CliError extends Error {
  constructor(
    readonly exitCode: number,
    readonly code: string,
    message: string,
    readonly hint?: string,
    readonly details?: unknown,
  ) {
    super(message);
  }
}

export function usageError(message: string, hint?: string): CliError {
  return new CliError(EXIT.usage, 'usage', message, hint ?? 'see slipway --help');
}

/** The error body of the API (spec §7). */
export interface ApiErrorBody {
  code: string;
  message: string;
  details?: Record<string, unknown>;
}

/** Turns a non-2xx answer into a CliError carrying the server's own code and message. */
export function apiError(status: number, body: ApiErrorBody, hint?: string): CliError {
  if (status === 401) {
    return new CliError(
      EXIT.auth,
      body.code,
      body.message,
      hint ?? 'run slipway login',
      body.details,
    );
  }
  return new CliError(
    EXIT.api,
    body.code,
    body.message,
    hint ?? hintFor(status, body),
    body.details,
  );
}

function hintFor(status: number, body: ApiErrorBody): string | undefined {
  const retry = body.details?.retryAfterSeconds;
  if (typeof retry === 'number') return `retry in ${retry} s`;
  if (body.code === 'not_found') return 'list your apps with slipway apps';
  const app = body.details?.app_id;
  if (body.code === 'deploy_failed' && typeof app === 'string') {
    return `fix the app and deploy again; its logs: slipway logs ${app}`;
  }
  if (status === 503) return 'retry in a few seconds';
  return undefined;
}

/** Reads an error body, or makes one when the answer is not JSON (a proxy's HTML page). */
export function parseErrorBody(status: number, text: string): ApiErrorBody {
  let parsed: Partial<ApiErrorBody> | undefined;
  try {
    parsed = JSON.parse(text) as Partial<ApiErrorBody>;
  } catch {
    // Not JSON (a proxy's page): the status and the start of the text say what little there is.
    parsed = undefined;
  }
  if (typeof parsed?.code === 'string' && typeof parsed.message === 'string') {
    return parsed as ApiErrorBody;
  }
  const snippet = text.trim().slice(0, 200);
  return { code: `http_${status}`, message: snippet || `the server answered ${status}` };
}
