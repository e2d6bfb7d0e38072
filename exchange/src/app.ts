// The HTTP application, built but never started here: tests drive it with
// app.inject(), main.ts listens.

import Fastify from 'fastify';
import type { FastifyBaseLogger, FastifyInstance } from 'fastify';

import { AccountStreams } from './account-events/account-streams.js';
import { Directory } from './accounts/directory.js';
import { idempotency } from './auth/idempotency.js';
import { DEFAULT_RATE_LIMITS, RateLimiter } from './auth/rate-limit.js';
import type { Config } from './config.js';
import { DEFAULT_STREAMS_PER_ADDRESS, StreamRegistry } from './feed/streams.js';
import { FeedWriter } from './feed/writer.js';
import { AddressLimiter, DEFAULT_PUBLIC_RATE_PER_MINUTE } from './http/address-limit.js';
import {
  BODY_LIMIT_BYTES,
  clientErrorHandler,
  errorHandlers,
  frameworkErrors,
} from './http/errors.js';
import { drainable } from './http/drain.js';
import { standbyGate } from './http/standby.js';
import { routeGuards } from './http/guard.js';
import { schemaErrorFormatter } from './http/problems.js';
import { validatorCompiler } from './http/validation.js';
import { metricsRoutes } from './metrics/metrics-route.js';
import { openApi } from './openapi.js';
import { accountRoutes } from './routes/accounts.js';
import { adminAccountRoutes } from './routes/admin-accounts.js';
import { adminAuditRoutes } from './routes/admin-audit.js';
import { adminBookRoutes } from './routes/admin-books.js';
import { adminClusterRoutes } from './routes/admin-clusters.js';
import { adminConsoleRoutes } from './routes/admin-console.js';
import { adminLeaseRoutes } from './routes/admin-leases.js';
import { adminMoneyRoutes } from './routes/admin-money.js';
import { adminReadRoutes } from './routes/admin-reads.js';
import { clusterRoutes } from './routes/clusters.js';
import { ConsoleStreams, consoleEventRoutes } from './routes/console-events.js';
import { consoleSessionRoutes } from './routes/console-session.js';
import { consoleFiles } from './console/static-files.js';
import { leaseRoutes } from './routes/leases.js';
import { providerClusterRoutes } from './routes/provider-clusters.js';
import { marketDataRoutes } from './routes/market-data.js';
import { orderRoutes } from './routes/orders.js';
import { accountStreamRoutes } from './routes/account-stream.js';
import { webhookRoutes } from './routes/webhooks.js';
import { streamRoutes } from './routes/stream.js';
import { platformRoutes } from './routes/platform.js';
import { serviceRoutes } from './routes/service.js';
import { sshKeyRoutes } from './routes/ssh-keys.js';
import { offlineContext } from './services.js';
import type { RouteContext, Services } from './services.js';

export { BODY_LIMIT_BYTES };

export interface AppConfig
  extends
    Pick<Config, 'logLevel'>,
    Partial<
      Pick<Config, 'rateLimits' | 'publicRatePerMinute' | 'streamsPerAddress' | 'feedWriter'>
    > {
  /** main.ts's pino logger; without one Fastify makes its own at `logLevel`. */
  readonly logger?: FastifyBaseLogger;
  /**
   * Webhooks may be http to localhost: development, that is the embedded
   * database (D34; docs/api/webhooks.md). Default false.
   */
  readonly webhooksToLocalhost?: boolean;
}

export type { Services };
// Re-exported so that importing the app also brings its FastifyInstance
// augmentations (app.drain) into the importer's types.
export type { DrainResult } from './http/drain.js';

/**
 * `'offline'`: every route is registered, no service is opened or read (the
 * routes get offlineContext()), and nothing that needs a database is hooked
 * in; what such an app can do is describe itself (npm run gen).
 */
export function buildApp(config: AppConfig, services: Services | 'offline'): FastifyInstance {
  const app = Fastify({
    bodyLimit: BODY_LIMIT_BYTES,
    frameworkErrors,
    clientErrorHandler,
    // Every problem of a request, each naming its field (docs/api/errors.md).
    schemaErrorFormatter,
    // A request arriving while the exchange drains gets 503 in the D19
    // envelope from http/drain.ts, not Fastify's own body.
    return503OnClosing: false,
    ...(config.logger === undefined
      ? { logger: config.logLevel === 'silent' ? false : { level: config.logLevel } }
      : { loggerInstance: config.logger }),
  });

  errorHandlers(app);
  app.setValidatorCompiler(validatorCompiler);
  app.decorateRequest('principal', null);
  app.decorateRequest('operator', null);

  // The services' own property descriptors, so a getter (the market of the
  // process that owns it now, server.ts) is read per request, not copied.
  const ctx: RouteContext =
    services === 'offline'
      ? offlineContext()
      : (Object.defineProperties(
          {
            limiter: new RateLimiter(config.rateLimits ?? DEFAULT_RATE_LIMITS),
            streams: new StreamRegistry(config.streamsPerAddress ?? DEFAULT_STREAMS_PER_ADDRESS),
            ...(config.feedWriter === false
              ? {}
              : { feedWriter: new FeedWriter({ logger: app.log }) }),
            directory: new Directory(services.db),
            accountStreams: services.accountStreams ?? new AccountStreams(services.db),
            webhooksToLocalhost: config.webhooksToLocalhost ?? false,
          },
          Object.getOwnPropertyDescriptors(services),
        ) as RouteContext);
  // Before any route: each route's guard comes from its config as it is added.
  routeGuards(
    app,
    ctx,
    new AddressLimiter(config.publicRatePerMinute ?? DEFAULT_PUBLIC_RATE_PER_MINUTE),
  );
  drainable(app);
  // A drain or a close ends the live feed's streams, each with its last
  // event, and the console's.
  const consoleStreams = new ConsoleStreams();
  if (services !== 'offline') {
    app.addHook('preClose', (done) => {
      ctx.streams.closeAll('unavailable');
      // After the streams' closing: the writer sends their last events, then ends.
      ctx.feedWriter?.stop();
      ctx.accountStreams.closeAll();
      consoleStreams.closeAll();
      done();
    });
  }
  const serving = services === 'offline' ? undefined : services.serving;
  if (serving !== undefined) standbyGate(app, serving);
  if (services !== 'offline') services.metrics?.registry.instrument(app);
  if (services !== 'offline') idempotency(app, services.db, () => services.market.clock.now());
  // Before the routes: it records them as they are added (openapi.ts).
  openApi(app);

  void app.register(serviceRoutes, { ctx });
  void app.register(accountRoutes, { ctx });
  void app.register(clusterRoutes, { ctx });
  void app.register(adminClusterRoutes, { ctx });
  void app.register(platformRoutes, { ctx });
  void app.register(adminAccountRoutes, { ctx });
  void app.register(adminAuditRoutes, { ctx });
  void app.register(adminReadRoutes, { ctx });
  void app.register(adminLeaseRoutes, { ctx });
  void app.register(adminBookRoutes, { ctx });
  void app.register(adminMoneyRoutes, { ctx });
  void app.register(adminConsoleRoutes, { ctx });
  void app.register(sshKeyRoutes, { ctx });
  void app.register(orderRoutes, { ctx });
  void app.register(marketDataRoutes, { ctx });
  void app.register(streamRoutes, { ctx });
  void app.register(accountStreamRoutes, { ctx });
  void app.register(webhookRoutes, { ctx });
  void app.register(leaseRoutes, { ctx });
  void app.register(providerClusterRoutes, { ctx });
  void app.register(metricsRoutes, { ctx });
  void app.register(consoleSessionRoutes, { ctx });
  void app.register(consoleEventRoutes, { ctx, streams: consoleStreams });
  consoleFiles(app);

  return app;
}
