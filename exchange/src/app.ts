// The HTTP application, built but never started here: tests drive it with
// app.inject(), main.ts listens.

import { Ajv } from 'ajv';
import type { ErrorObject, ValidateFunction } from 'ajv';
import Fastify from 'fastify';
import type { FastifyError, FastifyInstance, FastifyReply } from 'fastify';
import type { Duplex } from 'node:stream';

import { GpuxError, errorBody } from '@gpux/shared';
import { idempotency } from './auth/idempotency.js';
import { DEFAULT_RATE_LIMITS, RateLimiter } from './auth/rate-limit.js';
import type { Config } from './config.js';
import type { RouteContext, Services } from './services.js';
import { Directory } from './accounts/directory.js';
import { accountRoutes } from './routes/accounts.js';
import { clusterRoutes } from './routes/clusters.js';
import { sshKeyRoutes } from './routes/ssh-keys.js';
import { orderRoutes } from './routes/orders.js';
import { leaseRoutes } from './routes/leases.js';
import { marketDataRoutes } from './routes/market-data.js';
import { openApiRoute } from './openapi.js';

/**
 * Request validation. Bodies are JSON and must carry the right types: a count
 * sent as "16" is invalid_request, not quietly 16. Query strings and paths
 * are text by nature, so they are coerced to the declared types. In both, a
 * misspelt field is an error, never silently dropped (Fastify's default ajv
 * would coerce bodies and drop unknown fields).
 */
const AJV_OPTIONS = { removeAdditional: false, useDefaults: true, allErrors: false } as const;
const strictAjv = new Ajv({ ...AJV_OPTIONS, coerceTypes: false });
const coercingAjv = new Ajv({ ...AJV_OPTIONS, coerceTypes: 'array' });

type Validator = ((data: unknown) => boolean) & { errors?: ErrorObject[] | null };

/**
 * ajv coerces "1e400" or "Infinity" in a query to Infinity and then skips
 * minimum and maximum (they test finite numbers only), so `?limit=Infinity`
 * would pass and reach the database: after coercion, numbers must be finite.
 */
function finiteNumbersOnly(validate: ValidateFunction): Validator {
  const check: Validator = (data) => {
    if (!validate(data)) {
      check.errors = validate.errors ?? null;
      return false;
    }
    const entries = typeof data === 'object' && data !== null ? Object.entries(data) : [];
    const bad = entries.find(([, value]) =>
      [value].flat().some((v) => typeof v === 'number' && !Number.isFinite(v)),
    );
    check.errors =
      bad === undefined
        ? null
        : [
            {
              keyword: 'type',
              instancePath: `/${bad[0]}`,
              schemaPath: '#',
              params: {},
              message: 'must be a finite number',
            },
          ];
    return bad === undefined;
  };
  return check;
}

/** D20: larger bodies are rejected with payload_too_large. */
export const BODY_LIMIT_BYTES = 64 * 1024;

export type AppConfig = Pick<Config, 'logLevel'> & Partial<Pick<Config, 'rateLimits'>>;

export type { Services };

export function buildApp(config: AppConfig, services: Services): FastifyInstance {
  const app = Fastify({
    bodyLimit: BODY_LIMIT_BYTES,
    // Errors found before routing (bad percent-encoding, a path parameter over
    // Fastify's 100 characters) answer with the D19 envelope too.
    frameworkErrors: (error, _request, reply: FastifyReply) => {
      const err = toGpuxError(error);
      void reply.code(err.status).send(errorBody(err));
    },

    logger: config.logLevel === 'silent' ? false : { level: config.logLevel },
    // HTTP that never becomes a request (a malformed request line or header,
    // headers over Node's 16 KiB, a request cut off): the D19 envelope, then
    // the connection is closed (docs/api/errors.md).
    clientErrorHandler: (err: Error & { code?: string }, socket: Duplex) => {
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
    },
  });

  app.setNotFoundHandler((request, reply) => {
    const err = new GpuxError('not_found', `no route for ${request.method} ${request.url}`);
    return reply.code(err.status).send(errorBody(err));
  });

  app.setErrorHandler((error: FastifyError, request, reply) => {
    const err = toGpuxError(error);
    if (err.status >= 500) request.log.error({ err: error }, 'request failed');
    return reply.code(err.status).send(errorBody(err));
  });

  app.setValidatorCompiler(({ schema, httpPart }) =>
    httpPart === 'body'
      ? strictAjv.compile(schema)
      : finiteNumbersOnly(coercingAjv.compile(schema)),
  );
  app.decorateRequest('principal', null);
  // First: it records the routes added after it for GET /v1/openapi.json.
  openApiRoute(app);
  app.get('/healthz', () => ({ status: 'ok' }));
  idempotency(app, services.db, () => services.market.clock.now());
  const ctx: RouteContext = {
    ...services,
    limiter: new RateLimiter(config.rateLimits ?? DEFAULT_RATE_LIMITS),
    directory: new Directory(services.db),
  };
  accountRoutes(app, ctx);
  clusterRoutes(app, ctx);
  sshKeyRoutes(app, ctx);
  orderRoutes(app, ctx);
  marketDataRoutes(app, ctx);
  leaseRoutes(app, ctx);

  return app;
}

/** Maps anything thrown inside a request to a catalogue error (D19, D20). */
function toGpuxError(error: FastifyError): GpuxError {
  if (error instanceof GpuxError) return error;
  if (error.validation !== undefined) {
    return new GpuxError('invalid_request', error.message, { cause: error });
  }
  if (error.code === 'FST_ERR_CTP_BODY_TOO_LARGE') {
    return new GpuxError(
      'payload_too_large',
      `request body is larger than ${BODY_LIMIT_BYTES} bytes`,
      { cause: error },
    );
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
