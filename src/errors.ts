/**
 * The one error type of Slipway. Handlers and services throw it; the HTTP error handler and the MCP
 * tool wrapper render it as the spec's error body `{code, message, details?}`.
 */
export class AppError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details?: Record<string, unknown>,
  ) {
    super(message);
    this.name = 'AppError';
  }

  toBody(): ErrorBody {
    return this.details === undefined
      ? { code: this.code, message: this.message }
      : { code: this.code, message: this.message, details: this.details };
  }
}

export interface ErrorBody {
  code: string;
  message: string;
  details?: Record<string, unknown>;
}

export const notFound = (what = 'resource'): AppError =>
  new AppError(404, 'not_found', `${what} not found`);

export const unauthenticated = (message = 'missing or invalid bearer token'): AppError =>
  new AppError(401, 'unauthenticated', message);

export const forbidden = (message = 'this action needs the admin role'): AppError =>
  new AppError(403, 'forbidden', message);

export const badRequest = (message: string, details?: Record<string, unknown>): AppError =>
  new AppError(400, 'bad_request', message, details);
