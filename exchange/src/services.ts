import type { Directory } from './accounts/directory.js';
import type { RateLimiter } from './auth/rate-limit.js';
import type { Database } from './db/database.js';
import type { Market } from './market/market.js';

/** What the routes work with; main.ts opens them, tests bring their own. */
export interface Services {
  readonly db: Database;
  /** D31: guards the admin API. */
  readonly adminToken: string;
  /** The books and their writers, rebuilt from the database before traffic. */
  readonly market: Market;
}

/** Services plus what buildApp makes from the configuration. */
export interface RouteContext extends Services {
  readonly limiter: RateLimiter;
  /** Tokens' principals and providers' clusters, cached (accounts/directory.ts). */
  readonly directory: Directory;
}
