// GET /metrics: the Prometheus text of this process (docs/metrics.md). Not
// part of the API's OpenAPI document (it is not JSON and not versioned). Read
// with the metrics token (GPUX_METRICS_TOKEN), which opens nothing else, or
// an operator's token (D31: the admin token or an admin-scope account
// token); anything else is 401, a valid token without the admin scope 403
// (auth/authenticate.ts). A standby answers too: gpux_market_owner 0.

import type { FastifyPluginCallback, FastifyRequest } from 'fastify';

import { authenticateAdmin } from '../auth/authenticate.js';
import { bearerToken, sameSecret } from '../auth/tokens.js';
import type { RouteContext } from '../services.js';
import { refresh } from './scrape.js';

export const METRICS_PATH = '/metrics';

async function metricsGuard(ctx: RouteContext, request: FastifyRequest): Promise<void> {
  const token = bearerToken(request.headers.authorization);
  const metricsToken = ctx.metrics?.token;
  if (token !== undefined && metricsToken !== undefined && sameSecret(token, metricsToken)) return;
  await authenticateAdmin(ctx.directory, request, ctx.adminToken);
}

export const metricsRoutes: FastifyPluginCallback<{ ctx: RouteContext }> = (app, { ctx }, done) => {
  app.get(
    METRICS_PATH,
    {
      // Scraped every few seconds: not logged at info.
      logLevel: 'warn',
      // Its own guard below: the metrics token is not an API token.
      config: { access: 'public' },
      schema: { hide: true },
      onRequest: async (request) => metricsGuard(ctx, request),
    },
    async (_request, reply) => {
      const m = ctx.metrics;
      if (m === undefined) {
        return reply.code(404).type('text/plain').send('metrics are off in this process\n');
      }
      await refresh(m.registry, {
        db: ctx.db,
        market: () => (ctx.serving === undefined || ctx.serving() ? ctx.market : undefined),
        provisioningTimeoutMs: m.provisioningTimeoutMs,
        feedStreams: () => ({
          open: ctx.streams.size,
          handedOver: ctx.feedWriter?.watching ?? 0,
        }),
      });
      return reply.type(m.registry.registry.contentType).send(await m.registry.registry.metrics());
    },
  );
  done();
};
