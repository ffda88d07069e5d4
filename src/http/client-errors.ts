import { maxHeaderSize, STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import { AppError } from '../errors.js';

/**
 * A request Node could not read as HTTP never reaches fastify's handlers; it is answered here, in
 * the same envelope as every other error, before the connection closes: a head over Node's limit
 * (16 KB unless `--max-http-header-size` says otherwise) with `431 headers_too_large`, a head not
 * delivered within `server.headersTimeout` with `408 request_timeout`, anything else unreadable with
 * `400 bad_request`.
 */
export function answerClientError(err: Error & { code?: string }, socket: Duplex): void {
  // A reset connection has no one left to answer.
  if (err.code === 'ECONNRESET' || socket.destroyed) return;
  const error = clientError(err.code);
  if (socket.writable) {
    const body = JSON.stringify(error.toBody());
    socket.write(
      `HTTP/1.1 ${error.status} ${STATUS_CODES[error.status] ?? 'Error'}\r\n` +
        'Content-Type: application/json; charset=utf-8\r\n' +
        `Content-Length: ${Buffer.byteLength(body)}\r\n` +
        'Connection: close\r\n\r\n' +
        body,
    );
  }
  socket.destroy(err);
}

function clientError(code: string | undefined): AppError {
  switch (code) {
    case 'HPE_HEADER_OVERFLOW':
      return new AppError(
        431,
        'headers_too_large',
        `the request line and headers are larger than ${maxHeaderSize / 1024} KB`,
        { limitBytes: maxHeaderSize },
      );
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return new AppError(408, 'request_timeout', 'the request head did not arrive in time');
    default:
      return new AppError(400, 'bad_request', 'the request is not well-formed HTTP');
  }
}
