// A process that does not own the market (docs/ownership.md: a standby, or
// an owner whose lease ran out by its own clock) answers every customer and
// admin request with 503 `unavailable` and Retry-After, before anything
// else runs: no token lookup, no Idempotency-Key claim, no write. The public
// routes (/healthz, /readyz, the OpenAPI document) answer as usual, so a
// load balancer can tell the owner (/readyz 200) from a standby (503).

import { GpuxError } from '@gpux/shared';
import type { FastifyInstance } from 'fastify';

export function standbyGate(app: FastifyInstance, serving: () => boolean): void {
  app.addHook('onRequest', (request, _reply, done) => {
    const access = (request.routeOptions.config as { access?: string } | undefined)?.access;
    if (access === 'public' || serving()) {
      done();
      return;
    }
    done(
      new GpuxError(
        'unavailable',
        'this exchange process does not own the market now (a standby); retry shortly',
      ),
    );
  });
}
