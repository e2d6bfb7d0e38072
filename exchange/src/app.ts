// The HTTP application, built but never started here: tests drive it with
// app.inject(), main.ts listens.

import Fastify from 'fastify';
import type { FastifyError, FastifyInstance } from 'fastify';
import { GpuxError, errorBody } from '@gpux/shared';
import type { Config } from './config.js';
import type { Database } from './db/database.js';
import { accountRoutes } from './routes/accounts.js';
import { clusterRoutes } from './routes/clusters.js';
import { sshKeyRoutes } from './routes/ssh-keys.js';

/** D20: larger bodies are rejected with payload_too_large. */
export const BODY_LIMIT_BYTES = 64 * 1024;

export type AppConfig = Pick<Config, 'logLevel'>;

/** What the routes work with; main.ts opens them, tests bring their own. */
export interface Services {
  readonly db: Database;
  /** D31: guards the admin API. */
  readonly adminToken: string;
}

export function buildApp(config: AppConfig, services: Services): FastifyInstance {
  const app = Fastify({
    bodyLimit: BODY_LIMIT_BYTES,
    // A misspelt field must be an error, not silently dropped (ajv's
    // removeAdditional, on by default in Fastify, would drop it).
    ajv: { customOptions: { removeAdditional: false } },
    logger: config.logLevel === 'silent' ? false : { level: config.logLevel },
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

  app.decorateRequest('principal', null);
  app.get('/healthz', () => ({ status: 'ok' }));
  accountRoutes(app, services.db, services.adminToken);
  clusterRoutes(app, services.db, services.adminToken);
  sshKeyRoutes(app, services.db);

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
  const status = error.statusCode ?? 500;
  // Fastify's own 4xx (bad JSON, wrong content type, ...) are the client's mistake.
  if (status >= 400 && status < 500) {
    return new GpuxError('invalid_request', error.message, { cause: error });
  }
  // Never leak internals (D20): the message is fixed, the cause goes to the log.
  return new GpuxError('internal_error', 'internal server error', { cause: error });
}
