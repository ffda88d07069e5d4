import type { AppError } from '../errors.js';

/**
 * An error as an agent reads it: the tool's own argument names (not the HTTP API's `metadata.`),
 * no REST links (`status_url`), and what to do next. Services throw AppError for HTTP and MCP
 * alike; the wording for tools is decided here, not in the services.
 */
export interface ToolError {
  code: string;
  /** What went wrong, in one line. */
  message: string;
  /** What the agent can do about it: a tool to call, an argument to fix. */
  next_step: string;
  /** The argument at fault, as the tool names it: `name`, `env[0].name`, `files["src/app.js"]`. */
  field?: string;
  /** Try again after this many seconds (a store that cannot write right now). */
  retry_after_seconds?: number;
}

/** Where tool results carry the ToolError: `_meta` is not checked against the output schema. */
export const ERROR_META_KEY = 'slipway/error';

/** The one-line text of an error result: what went wrong, then what to do. */
export const errorSummary = (error: ToolError): string => `${error.message}: ${error.next_step}`;

/** The AppError of a service as `tool` reports it; `nextStep` overrides the code's usual advice. */
export function toolError(err: AppError, tool: string, nextStep?: string): ToolError {
  const details = err.details ?? {};
  const field = typeof details.field === 'string' ? argumentName(details.field) : undefined;
  const error: ToolError = {
    code: err.code,
    message: toolMessage(err.message),
    next_step: nextStep ?? adviceFor(err, tool, field),
  };
  if (field !== undefined) error.field = field;
  if (err.code === 'bad_expires_in') error.field = 'expires_in';
  if (typeof details.retryAfterSeconds === 'number') {
    error.retry_after_seconds = details.retryAfterSeconds;
  }
  return error;
}

/** `metadata.env[0].name` (the HTTP field) → `env[0].name` (the deploy_app argument). */
export function argumentName(field: string): string {
  return field.replace(/^metadata\.?/, '') || 'arguments';
}

/** The first line, without the HTTP API's field prefix; log lines travel in `logs` instead. */
export function toolMessage(message: string): string {
  return firstLine(message).replace(/\bmetadata\.(?=[a-z_])/g, '');
}

/** Messages may carry the app's last lines after `; last lines:`; results carry them in logs. */
export function firstLine(text: string): string {
  return (text.split('\n', 1)[0] ?? '').replace(/;? last lines:$/, '');
}

function adviceFor(err: AppError, tool: string, field: string | undefined): string {
  const fix = `fix ${field ?? 'the arguments'} and call ${tool} again`;
  switch (err.code) {
    case 'not_found':
      return err.message.startsWith('share link')
        ? 'list_share_links shows the working links of an app'
        : 'list_apps shows your apps';
    case 'name_taken':
      return 'choose another name';
    case 'bad_metadata':
    case 'missing_name':
      return fix;
    case 'bad_request':
      if (field !== undefined) return fix;
      return tool === 'deploy_app' ? 'fix the source and call deploy_app again' : fix;
    case 'missing_source':
      return 'send the source as files (path → content) or as tarball_base64';
    case 'payload_too_large':
      return 'send a smaller source: leave out node_modules, build output and other generated files';
    case 'unknown_version':
      return 'list_versions shows the versions you can roll back to';
    case 'quota_exceeded':
      return 'delete_app an app you no longer need, or redeploy one you have (list_apps)';
    case 'policy_denied':
    case 'forbidden':
      return 'ask an admin of this server for a key that may do this';
    case 'bad_expires_in':
      return 'give expires_in as a duration such as "30m" or "24h", or leave it out';
    case 'share_links_unavailable':
      return "this server cannot keep share links: hand out the app's url instead";
    case 'too_many_attempts': {
      const seconds = err.details?.retryAfterSeconds;
      return `wait ${typeof seconds === 'number' ? `${seconds} s` : 'a little'} and call ${tool} again`;
    }
    case 'nothing_to_cancel':
      return 'get_app shows the app: its last deploy already served, failed or was cancelled';
    case 'storage_unavailable':
    case 'not_ready':
      return 'try again in a few seconds';
    case 'internal':
      return 'try again; if it keeps failing, tell the operator of this server';
    default:
      return `check the arguments against the input schema of ${tool} and call it again`;
  }
}
