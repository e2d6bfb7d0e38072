import type { AccountStreams } from './account-events/account-streams.js';
import type { Directory } from './accounts/directory.js';
import type { RateLimiter } from './auth/rate-limit.js';
import type { Database } from './db/database.js';
import type { StreamRegistry } from './feed/streams.js';
import type { FeedWriter } from './feed/writer.js';
import type { SecretBox } from './leases/secret-box.js';
import type { Market } from './market/market.js';
import type { ExchangeMetrics } from './metrics/exchange-metrics.js';
import type { ReadinessSources } from './routes/readiness.js';

/** What the routes work with; main.ts opens them, tests bring their own. */
export interface Services {
  readonly db: Database;
  /**
   * The account event streams, when the process around the app wakes them
   * as events are numbered (account-events/numberer.ts); else the app makes its own.
   */
  readonly accountStreams?: AccountStreams;
  /** D31: guards the admin API. */
  readonly adminToken: string;
  /** The books and their writers, rebuilt from the database before traffic. */
  readonly market: Market;
  /** D28: opens the kubeconfigs agents report, sealed at rest. */
  readonly secrets: SecretBox;
  /**
   * Does this process own the market and serve now (docs/ownership.md)?
   * Unset: always (an app over a market of its own, in tests). When it says
   * no, customer and admin requests get 503 and /readyz says so.
   */
  readonly serving?: () => boolean;
  /**
   * GET /readyz's database and event bus (routes/readiness.ts). Unset: the
   * database probed is `db`, and there is no event bus to check.
   */
  readonly readiness?: ReadinessSources;
  /** GPUX_CONSOLE_SESSION_HOURS (console/sessions.ts); unset: its default. */
  readonly consoleSessionHours?: number;
  /** D25, for the console's Leases page (GET /v1/admin/leases); unset: the market's default. */
  readonly provisioningTimeoutMs?: number;
  /** GET /metrics (metrics/metrics-route.ts); unset: 404 there, nothing measured. */
  readonly metrics?: MetricsService;
}

export interface MetricsService {
  readonly registry: ExchangeMetrics;
  /** GPUX_METRICS_TOKEN: reads /metrics and nothing else. */
  readonly token: string | undefined;
  /** D25, for gpux_leases_provisioning_oldest_ratio. */
  readonly provisioningTimeoutMs: number;
}

/**
 * Services plus what buildApp makes from the configuration. Routes and
 * guards read it only while they handle a request, never when they are
 * registered, so an app can be built without services (offlineContext).
 */
export interface RouteContext extends Services {
  readonly limiter: RateLimiter;
  /** The live feed streams open, per address (feed/streams.ts). */
  readonly streams: StreamRegistry;
  /** The process that writes the live feed's streams; undefined: this process writes them. */
  readonly feedWriter?: FeedWriter;
  /** The account event streams open (account-events/account-streams.ts). */
  readonly accountStreams: AccountStreams;
  /** Webhooks may be http to localhost (development: the embedded database, webhooks/url.ts). */
  readonly webhooksToLocalhost: boolean;
  /** Tokens' principals and providers' clusters, cached (accounts/directory.ts). */
  readonly directory: Directory;
}

/**
 * The context of an app built with no services, to generate its OpenAPI
 * document (npm run gen) without a database: any use of it throws, so a
 * route that reached for a service while being registered would fail the
 * generation rather than open a connection.
 */
export function offlineContext(): RouteContext {
  return new Proxy({} as RouteContext, {
    get(_target, property) {
      throw new Error(
        `an app built without services used ctx.${String(property)}; routes may read services only while they handle a request`,
      );
    },
  });
}
