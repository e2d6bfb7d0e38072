// D34: SIGTERM drains. No new connections are accepted; requests already
// running finish and their answers carry `Connection: close`; a request that
// arrives on an open connection meanwhile is answered 503 `unavailable` in the
// D19 envelope (Fastify's own 503 body is turned off: return503OnClosing); and
// whatever is still connected when the deadline (GPUX_DRAIN_TIMEOUT_SECONDS)
// passes is closed, so a client holding a half-sent request cannot keep the
// exchange from stopping. The probes answer as themselves meanwhile (issue
// 23): /healthz 200 (the process is alive), /readyz 503 naming the drain
// (routes/readiness.ts).
//
// Per request this costs two hooks that read one boolean (onRequest, onSend).

import { GpuxError } from '@gpux/shared';
import type { FastifyInstance } from 'fastify';

export interface DrainResult {
  /** Connections were still open at the deadline and were closed then. */
  readonly forced: boolean;
}

declare module 'fastify' {
  interface FastifyInstance {
    /**
     * Stops the app as D34 says: drain, close what is left after `timeoutMs`,
     * resolve once the server is closed. Call once; the app cannot serve again.
     */
    drain(timeoutMs: number): Promise<DrainResult>;
    /** Has drain() begun (GET /readyz answers 503 from then on)? */
    draining(): boolean;
  }
}

/** The probes, answered by their routes also while the exchange drains. */
const PROBES: ReadonlySet<string> = new Set(['/healthz', '/readyz']);

export function drainable(app: FastifyInstance): void {
  let draining = false;

  app.addHook('onRequest', (request, _reply, done) => {
    if (!draining || PROBES.has(request.routeOptions.url ?? '')) {
      done();
      return;
    }
    done(new GpuxError('unavailable', 'the exchange is shutting down; retry shortly'));
  });

  app.addHook('onSend', (_request, reply, payload, done) => {
    // Node keeps the connection otherwise until its keep-alive timeout.
    if (draining) void reply.header('connection', 'close');
    done(null, payload);
  });

  app.decorate('draining', () => draining);
  app.decorate('drain', async (timeoutMs: number): Promise<DrainResult> => {
    draining = true;
    let forced = false;
    const deadline = setTimeout(() => {
      forced = true;
      app.server.closeAllConnections();
    }, timeoutMs);
    try {
      await app.close();
    } finally {
      clearTimeout(deadline);
    }
    return { forced };
  });
}
