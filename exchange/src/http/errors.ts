// Every error answer is the D19 envelope with a catalogue code (D20): thrown
// in a handler or hook, found by Fastify before routing, or HTTP that never
// became a request. Never a stack trace.

import { GpuxError, errorBody } from '@gpux/shared';
import type { FastifyError, FastifyInstance, FastifyReply } from 'fastify';
import type { Duplex } from 'node:stream';

/** D20: larger bodies are rejected with payload_too_large. */
export const BODY_LIMIT_BYTES = 64 * 1024;

/** Maps anything thrown inside a request to a catalogue error (D19, D20). */
export function toGpuxError(error: FastifyError, bodyLimit = BODY_LIMIT_BYTES): GpuxError {
  if (error instanceof GpuxError) return error;
  if (error.validation !== undefined) {
    return new GpuxError('invalid_request', error.message, { cause: error });
  }
  if (error.code === 'FST_ERR_CTP_BODY_TOO_LARGE') {
    return new GpuxError('payload_too_large', `request body is larger than ${bodyLimit} bytes`, {
      cause: error,
    });
  }
  // PostgreSQL text cannot hold U+0000 (22021): a NUL in an id or name the
  // client sent is the client's mistake, not a server fault.
  if (error.code === '22021') {
    return new GpuxError('invalid_request', 'text must not contain the NUL character (\\u0000)', {
      cause: error,
    });
  }
  const status = error.statusCode ?? 500;
  // Fastify's own 4xx (bad JSON, wrong content type, ...) are the client's mistake.
  if (status >= 400 && status < 500) {
    return new GpuxError('invalid_request', error.message, { cause: error });
  }
  // Never leak internals (D20): the message is fixed, the cause goes to the log.
  return new GpuxError('internal_error', 'internal server error', { cause: error });
}

/**
 * Errors found before routing (bad percent-encoding, a path parameter over
 * Fastify's 100 characters) answer with the D19 envelope too.
 */
export function frameworkErrors(error: FastifyError, _request: unknown, reply: FastifyReply): void {
  const err = toGpuxError(error);
  void reply.code(err.status).send(errorBody(err));
}

/**
 * HTTP that never becomes a request (a malformed request line or header,
 * headers over Node's 16 KiB, a request cut off): the D19 envelope, then the
 * connection is closed (docs/api/errors.md).
 */
export function clientErrorHandler(err: Error & { code?: string }, socket: Duplex): void {
  if (err.code === 'ECONNRESET' || socket.destroyed) return;
  const message =
    err.code === 'HPE_HEADER_OVERFLOW'
      ? 'request headers are too large (at most 16 KiB)'
      : err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? 'the request did not arrive in time'
        : 'malformed HTTP request';
  const body = JSON.stringify(errorBody(new GpuxError('invalid_request', message)));
  if (socket.writable) {
    socket.write(
      `HTTP/1.1 400 Bad Request\r\nContent-Type: application/json; charset=utf-8\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy();
}

/** Unknown routes and thrown errors: the envelope, logged when it is the server's fault. */
export function errorHandlers(app: FastifyInstance): void {
  app.setNotFoundHandler((request, reply) => {
    const err = new GpuxError('not_found', `no route for ${request.method} ${request.url}`);
    return reply.code(err.status).send(errorBody(err));
  });

  app.setErrorHandler((error: FastifyError, request, reply) => {
    // A route may take larger bodies (POST /v1/admin/clusters).
    const err = toGpuxError(error, request.routeOptions.bodyLimit);
    // unavailable (503) is the drain answering as planned, not a fault.
    if (err.status >= 500 && err.code !== 'unavailable') {
      request.log.error({ err: error }, 'request failed');
    }
    // A drain, a standby, a process that lost the market: another process
    // answers within a second or so (docs/ownership.md).
    if (err.code === 'unavailable') void reply.header('Retry-After', 1);
    return reply.code(err.status).send(errorBody(err));
  });
}
