import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ShuttingDown } from '../commit-gate.js';
import { AppError } from '../errors.js';
import { asStorageUnavailable } from '../persistence/storage-faults.js';

/** Renders every error, including fastify's own, as the spec's error body `{code, message, details?}`. */
export function installErrorHandlers(app: FastifyInstance): void {
  app.setErrorHandler((error: FastifyError | AppError, request, reply) => {
    const appError = toAppError(error, request);
    // AppErrors are answers (503 not_ready, 500 deploy_failed); only the unexpected is logged
    // (a storage fault that reached here unconverted too: where it came from is worth knowing).
    if (!(error instanceof AppError) && appError.status >= 500) {
      request.log.error({ err: error }, 'request failed');
    }
    const retry =
      appError instanceof ShuttingDown
        ? appError.retryAfterSeconds
        : appError.details?.retryAfterSeconds;
    if (typeof retry === 'number') void reply.header('retry-after', String(retry));
    return reply.status(appError.status).send(appError.toBody());
  });

  app.setNotFoundHandler((request, reply) =>
    reply
      .status(404)
      .send(new AppError(404, 'not_found', `no route ${request.method} ${request.url}`).toBody()),
  );
}

/**
 * Errors fastify meets before any route runs (a malformed URL, a parameter past the router's
 * length limit): the same envelope as every other error.
 */
export function frameworkError(error: FastifyError, _request: FastifyRequest, reply: FastifyReply) {
  const status = error.code === 'FST_ERR_MAX_PARAM_LENGTH' ? 414 : 400;
  const message = status === 414 ? 'a path parameter is too long' : 'malformed URL';
  void reply.status(status).send(new AppError(status, 'bad_request', message).toBody());
}

function toAppError(error: FastifyError | AppError, request: FastifyRequest): AppError {
  if (error instanceof AppError) return error;
  const storage = asStorageUnavailable(error);
  if (storage) return storage;
  if (error.validation) {
    const context = error.validationContext ?? 'request';
    return new AppError(400, 'bad_request', `invalid ${context}: ${error.message}`, {
      issues: error.validation.map((v) => ({ path: v.instancePath, message: v.message })),
    });
  }
  switch (error.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE': {
      const limitBytes = request.routeOptions.bodyLimit;
      return new AppError(
        413,
        'payload_too_large',
        `the request body is larger than the limit of ${limitBytes} bytes`,
        { limitBytes },
      );
    }
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new AppError(415, 'unsupported_media_type', 'unsupported content type');
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return new AppError(400, 'bad_request', 'JSON body is empty');
  }
  const status = error.statusCode ?? 500;
  if (status >= 400 && status < 500) {
    return new AppError(status, 'bad_request', error.message);
  }
  return new AppError(500, 'internal', 'internal error');
}
