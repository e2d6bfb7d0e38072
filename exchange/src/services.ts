import type { RateLimiter } from './auth/rate-limit.js';
import type { Database } from './db/database.js';

/** What the routes work with; main.ts opens them, tests bring their own. */
export interface Services {
  readonly db: Database;
  /** D31: guards the admin API. */
  readonly adminToken: string;
}

/** Services plus what buildApp makes from the configuration. */
export interface RouteContext extends Services {
  readonly limiter: RateLimiter;
}
