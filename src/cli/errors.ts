/**
 * Exit codes scripts can rely on (README "CLI"): 0 done, 1 the server or the network refused,
 * 2 the command line was wrong, 3 no credentials or the server rejected them, 130 the person
 * stopped watching a deploy with Ctrl-C (the deploy goes on).
 */
export const EXIT = { ok: 0, api: 1, usage: 2, auth: 3, interrupted: 130 } as const;

/**
 * An error the CLI explains in one line plus a next step (`hint`, printed as `next:`), never with
 * a stack trace. The hint is required: every error tells the person what to do about it.
 */
export class CliError extends Error {
  constructor(
    readonly exitCode: number,
    readonly code: string,
    message: string,
    readonly hint: string,
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

/** The next step for an answer of the API, by its code first, else by its status. */
function hintFor(status: number, body: ApiErrorBody): string {
  const retry = body.details?.retryAfterSeconds;
  if (typeof retry === 'number') return `retry in ${retry} s`;
  const app = body.details?.app_id;
  switch (body.code) {
    case 'not_found':
      if (body.message.startsWith('no route')) {
        return "check the server URL: the server's address, without a path (slipway whoami)";
      }
      return body.message.startsWith('share link')
        ? 'list the links that work with slipway share ls <app>'
        : 'list your apps with slipway apps';
    case 'deploy_failed':
      // Someone cancelled it while this call waited: nothing in the app to fix.
      if (body.details?.reason === 'Cancelled') return 'deploy again when you want it live';
      return typeof app === 'string'
        ? `fix the app and deploy again; its logs: slipway logs ${app}`
        : 'fix the app and deploy again';
    case 'nothing_to_cancel':
      return 'nothing was cancelled; slipway apps shows what each app serves';
    case 'name_taken':
      return 'choose another name with --name';
    case 'unknown_version':
      return 'list the versions you can go back to with slipway versions <app>';
    case 'bad_expires_in':
      return 'pass --expires as a duration such as 30m or 24h';
    case 'quota_exceeded':
      return 'delete an app you no longer need (slipway rm <app>), or redeploy one you have';
    case 'payload_too_large':
      return 'leave large files out with a .slipwayignore';
    case 'policy_denied':
    case 'forbidden':
      return 'ask an admin of this server; slipway whoami shows your role';
  }
  if (status === 404) return 'check the server URL (slipway whoami) and the names you gave';
  if (status === 503) return 'retry in a few seconds';
  if (status >= 500) return "retry; if it fails again, the server's log says why";
  return 'fix what the message names and run the command again';
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
