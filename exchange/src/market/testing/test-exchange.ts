// An exchange for API tests: a fresh PostgreSQL database (or PGlite), every
// book rebuilt, a clock the test moves, and helpers to onboard accounts and
// clusters through the admin API and call the customer API.

import { randomBytes } from 'node:crypto';

import { GPU_TYPES, ZONES } from '@gpux/shared';
import type { GpuType, TokenScope, Zone } from '@gpux/shared';
import type { FastifyBaseLogger, FastifyInstance } from 'fastify';

import { buildApp } from '../../app.js';
import { SecretBox } from '../../leases/secret-box.js';
import { guardSerialization } from '../../http/testing/serialization-guard.js';
import type { RateLimits } from '../../auth/rate-limit.js';
import type { Database } from '../../db/database.js';
import { DEFAULT_FEED_OPTIONS } from '../../feed/book-feed.js';
import type { FeedOptions } from '../../feed/book-feed.js';
import type { Logger } from '../../logger.js';
import { SILENT_LOGGER } from '../../logger.js';
import { AccountEventNumberer, numberAll } from '../../account-events/numberer.js';
import { AccountStreams } from '../../account-events/account-streams.js';
import { migrate } from '../../db/migrate.js';
import { openPglite } from '../../db/pglite.js';
import { freshPostgres } from '../../db/testing/fresh-database.js';
import { ExchangeMetrics } from '../../metrics/exchange-metrics.js';
import { DEFAULT_MARKET_OPTIONS, Market } from '../market.js';
import type { Clock } from '../market.js';
import { MarketOwnership } from '../ownership.js';

export const ADMIN_TOKEN = 'test-admin-token-0123456789';
/** Reads GET /metrics and nothing else (GPUX_METRICS_TOKEN). */
export const METRICS_TOKEN = 'test-metrics-token-0123456789';
/** 2026-11-22T00:00:00Z: tests start here and move the clock by hand. */
export const T0 = Date.UTC(2026, 10, 22);

export class ManualClock implements Clock {
  constructor(public t: number = T0) {}
  now(): number {
    return this.t;
  }
  advance(ms: number): void {
    this.t += ms;
  }
}

export interface Reply {
  readonly status: number;
  readonly json: Record<string, unknown>;
  readonly body: string;
  readonly headers: Record<string, string | string[] | number | undefined>;
}

export interface Party {
  readonly accountId: string;
  readonly organizationId: string;
  readonly token: string;
}

export interface TestExchangeOptions {
  readonly engine?: 'postgres' | 'pglite';
  readonly rateLimits?: RateLimits;
  readonly provisioningTimeoutMs?: number;
  /** Reuse a database (the restart test). */
  readonly db?: Database;
  /** Reuse the secret key of an exchange before a restart (default: a new one). */
  readonly secrets?: SecretBox;
  /** What the market logs (default: nothing). */
  readonly logger?: Logger;
  /** Fastify's logger, requests included (default: none, or GPUX_TEST_LOG's level). */
  readonly requestLogger?: FastifyBaseLogger;
  /** The live feed's bounds (default: the exchange's, without heartbeats). */
  readonly feed?: Partial<FeedOptions>;
  /** Live feed streams per client address (default: the exchange's). */
  readonly streamsPerAddress?: number;
  /** False: the app writes the live feed's streams itself, as GPUX_FEED_WRITER=0 (default: its writer process). */
  readonly feedWriter?: boolean;
  /** Public requests per client address and minute (default: the exchange's). */
  readonly publicRatePerMinute?: number;
}

/** What TestExchange.marketLease made. */
export interface MarketLease {
  readonly book: Book;
  readonly provider: Party;
  readonly buyer: Party;
  readonly clusterId: string;
  readonly orderId: string;
  readonly leaseId: string;
}

/** A book, as the API names it in an order's body. */
export interface Book {
  readonly gpu_type: GpuType;
  readonly zone: Zone;
}

export interface TestExchange {
  readonly app: FastifyInstance;
  /** D28: seals and opens the kubeconfigs agents report. */
  readonly secrets: SecretBox;
  readonly db: Database;
  readonly market: Market;
  readonly clock: ManualClock;
  /** What GET /metrics serves (its gRPC and lease hooks for the agents' harness). */
  readonly metrics: ExchangeMetrics;
  call(
    method: string,
    url: string,
    token: string,
    body?: unknown,
    headers?: Record<string, string>,
  ): Promise<Reply>;
  account(
    name: string,
    opts?: { organization?: string; scopes?: TokenScope[]; creditLimit?: number },
  ): Promise<Party>;
  /**
   * An account of its own: named `<role>-<n>-<tag>`, in an organization of
   * that name, never used before on this database. What a test asserts about its
   * balance, orders or leases is then what the test itself did.
   */
  party(
    role: string,
    opts?: { scopes?: TokenScope[]; creditLimit?: number },
  ): Promise<Party & { readonly name: string }>;
  /**
   * A book no earlier call handed out (twelve in all): a test that trades in
   * it meets no other test's orders, fills, last trade or liquidity.
   */
  book(): Book;
  /** A cluster of `nodes` nodes owned by `provider`; returns its id. */
  cluster(provider: Party, nodes: number, gpuType?: string, zone?: string): Promise<string>;
  /**
   * What the provider's agent reports once it has provisioned the lease
   * (D25): the lease goes active. Fails the test if the book refuses it.
   */
  leaseReady(leaseId: string, book?: Book): Promise<void>;
  /**
   * A lease of one node bought at market in a fresh book: `tag`'s provider
   * sells 8 GPUs for 24 h at $2/GPU-h, `tag`'s buyer takes 4 hours. The lease
   * is provisioning. Fails the test if either order is refused.
   */
  marketLease(tag: string): Promise<MarketLease>;
  /** Let time pass in every book (expiry, scheduled orders, lease ends). */
  tick(ms?: number): Promise<void>;
  /** Number every account event queued so far (account-events/numberer.ts; it also runs by itself). */
  numberEvents(): Promise<void>;
  /** Serve the app on a port of 127.0.0.1 (streams need real HTTP); returns its URL. */
  listen(): Promise<string>;
  /** Stop the app and the books; keep the database (for a restart). */
  stop(): Promise<void>;
  /** Stop and drop the database. */
  close(): Promise<void>;
}

const NO_LIMITS: RateLimits = { query: 1_000_000, create: 1_000_000, cancel: 1_000_000 };

export async function testExchange(o: TestExchangeOptions = {}): Promise<TestExchange> {
  let db: Database;
  let drop: () => Promise<void>;
  if (o.db !== undefined) {
    db = o.db;
    drop = () => db.close();
  } else if (o.engine === 'pglite') {
    db = await openPglite();
    drop = () => db.close();
  } else {
    const fresh = await freshPostgres();
    db = fresh.db;
    drop = () => fresh.drop();
  }
  await migrate(db);
  const clock = new ManualClock();
  // Every write batch fenced, as in the exchange (market/ownership.ts); this
  // exchange takes the books whoever held them (an earlier one on o.db).
  const ownership = new MarketOwnership(
    db,
    { instanceId: 'test-exchange', host: 'test', hostKey: null, pid: 0, url: undefined },
    { leaseMs: 24 * 3_600_000, isGone: () => true },
  );
  if (!(await ownership.tryAcquire(true)).acquired) throw new Error('could not own the market');
  const market = await Market.open(db, {
    tickIntervalMs: 0,
    clock,
    fence: { tokenFor: (b) => ownership.tokenFor(b), fenced: () => undefined },
    feed: { ...DEFAULT_FEED_OPTIONS, heartbeatMs: 0, ...o.feed },
    ...(o.logger === undefined ? {} : { logger: o.logger }),
    ...(o.provisioningTimeoutMs === undefined
      ? {}
      : { provisioningTimeoutMs: o.provisioningTimeoutMs }),
  });
  // Issue 22: the accounts' events numbered after their commit, as in the exchange (owned-part.ts).
  const accountStreams = new AccountStreams(db);
  const numberer = new AccountEventNumberer(db, {
    logger: o.logger ?? SILENT_LOGGER,
    onNumbered: (heads) => accountStreams.numbered(heads),
  });
  market.onAccountEvents(() => numberer.wake());
  numberer.start();
  const secrets = o.secrets ?? new SecretBox(randomBytes(32));
  const metrics = new ExchangeMetrics();
  market.onCommit(metrics.onCommit);
  const app = buildApp(
    {
      logLevel: (process.env['GPUX_TEST_LOG'] as 'error' | undefined) ?? 'silent',
      rateLimits: o.rateLimits ?? NO_LIMITS,
      webhooksToLocalhost: true,
      ...(o.streamsPerAddress === undefined ? {} : { streamsPerAddress: o.streamsPerAddress }),
      ...(o.feedWriter === undefined ? {} : { feedWriter: o.feedWriter }),
      ...(o.publicRatePerMinute === undefined
        ? {}
        : { publicRatePerMinute: o.publicRatePerMinute }),
      ...(o.requestLogger === undefined ? {} : { logger: o.requestLogger }),
    },
    {
      db,
      accountStreams,
      adminToken: ADMIN_TOKEN,
      market,
      secrets,
      provisioningTimeoutMs:
        o.provisioningTimeoutMs ?? DEFAULT_MARKET_OPTIONS.provisioningTimeoutMs,
      metrics: {
        registry: metrics,
        token: METRICS_TOKEN,
        provisioningTimeoutMs:
          o.provisioningTimeoutMs ?? DEFAULT_MARKET_OPTIONS.provisioningTimeoutMs,
      },
    },
  );
  // Every answer must serialize to exactly its view (http/testing/serialization-guard.ts);
  // a difference fails the request that made it, and close() fails if any happened.
  const guard = guardSerialization(app);
  let stopped = false;
  let parties = 0;
  // Names stay apart from an earlier exchange's on the same database (o.db).
  const tag = randomBytes(2).toString('hex');
  const books: Book[] = GPU_TYPES.flatMap((gpu_type) => ZONES.map((zone) => ({ gpu_type, zone })));

  const call: TestExchange['call'] = async (method, url, token, body, headers = {}) => {
    const res = await app.inject({
      method: method as 'GET',
      url,
      headers: { authorization: `Bearer ${token}`, ...headers },
      ...(body === undefined ? {} : { payload: body as Record<string, unknown> }),
    });
    let json: Record<string, unknown> = {};
    try {
      json = res.json<Record<string, unknown>>();
    } catch {
      // Not JSON (kubeconfig YAML).
    }
    return { status: res.statusCode, json, body: res.body, headers: res.headers };
  };

  const ex: TestExchange = {
    app,
    secrets,
    db,
    market,
    clock,
    metrics,
    call,
    async account(name, a = {}) {
      const r = await call('POST', '/v1/admin/accounts', ADMIN_TOKEN, {
        name,
        organization: a.organization ?? name,
        scopes: a.scopes ?? ['trade', 'read', 'leases', 'provider'],
        ...(a.creditLimit === undefined ? {} : { credit_limit: a.creditLimit }),
      });
      if (r.status !== 201) throw new Error(`account ${name}: ${r.body}`);
      return {
        accountId: r.json['account_id'] as string,
        organizationId: r.json['organization_id'] as string,
        token: r.json['token'] as string,
      };
    },
    async party(role, a = {}) {
      const name = `${role}-${++parties}-${tag}`;
      return { name, ...(await ex.account(name, a)) };
    },
    book() {
      const next = books.shift();
      if (next === undefined) throw new Error('every book of this test exchange is taken');
      return next;
    },
    async cluster(provider, nodes, gpuType = 'h100', zone = 'us-west-1') {
      const r = await call('POST', '/v1/admin/clusters', ADMIN_TOKEN, {
        provider_account_id: provider.accountId,
        gpu_type: gpuType,
        zone,
        nodes: Array.from({ length: nodes }, (_, i) => ({
          hostname: `node-${i + 1}.${provider.accountId.slice(-6)}.example`,
        })),
      });
      if (r.status !== 201) throw new Error(`cluster: ${r.body}`);
      return r.json['cluster_id'] as string;
    },
    async leaseReady(leaseId, book = { gpu_type: 'h100', zone: 'us-west-1' }) {
      const ok = await market
        .writer(book.gpu_type, book.zone)
        .submit((state, changes) => state.leaseReady(leaseId, clock.now(), changes));
      if (!ok) throw new Error(`leaseReady: the book refused ${leaseId}`);
    },
    async marketLease(tag) {
      const book = this.book();
      const provider = await this.party(`${tag}-provider`);
      const clusterId = await this.cluster(provider, 1, book.gpu_type, book.zone);
      const buyer = await this.party(`${tag}-buyer`);
      const sell = await call('POST', '/v1/orders', provider.token, {
        side: 'sell',
        ...book,
        gpu_count: 8,
        duration_hours: 24,
        limit_price: 2,
      });
      if (sell.status !== 200) throw new Error(`marketLease: the sell: ${sell.body}`);
      const buy = await call('POST', '/v1/orders', buyer.token, {
        side: 'buy',
        ...book,
        gpu_count: 8,
        duration_hours: 4,
      });
      if (buy.json['status'] !== 'filled') throw new Error(`marketLease: the buy: ${buy.body}`);
      const orderId = buy.json['order_id'] as string;
      const leaseId = buy.json['lease_id'] as string;
      return { book, provider, buyer, clusterId, orderId, leaseId };
    },
    async listen() {
      await app.listen({ host: '127.0.0.1', port: 0 });
      const address = app.server.address();
      if (address === null || typeof address === 'string') throw new Error('not listening');
      return `http://127.0.0.1:${address.port}`;
    },
    numberEvents: () => numberAll(db),
    async tick(ms = 0) {
      clock.advance(ms);
      await market.tickAll(clock.now());
    },
    async stop() {
      if (stopped) return;
      stopped = true;
      await app.close();
      await market.close();
      await numberer.close();
      await ownership.release();
    },
    async close() {
      await ex.stop();
      await drop();
      if (guard.mismatches.length > 0) {
        throw new Error(`answers differed from their views:\n${guard.mismatches.join('\n')}`);
      }
    },
  };
  return ex;
}
