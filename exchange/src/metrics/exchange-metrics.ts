// The exchange's Prometheus metrics (issue 23, docs/metrics.md): one
// registry per process, served at GET /metrics (metrics-route.ts). What
// happens is counted where it happens, but never per order: HTTP requests
// when answered, commit groups when written (market/commit-group.ts),
// agents' gRPC calls when answered (providers/grpc-server.ts), lease
// durations when an agent reports them. What the market and the database
// hold (book depth, leases by state, heartbeats, the outbox, revocations
// not yet confirmed) is read when /metrics is scraped (scrape.ts).

import { status as grpcStatus } from '@grpc/grpc-js';
import type { FastifyInstance } from 'fastify';
import { Counter, Gauge, Histogram, Registry } from 'prom-client';

import type { LeaseRow } from '../market/rows.js';
import type { LeaseObserver } from '../providers/provider-context.js';

/** Seconds: a request, a commit (1 ms … 10 s). */
const FAST_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10];
/** Seconds: provisioning and revocation (1 s … 1 h). */
const SLOW_BUCKETS = [1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600];
/** Commands per commit group (up to 256 per book, market/book-writer.ts). */
const BATCH_BUCKETS = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024];

const BOOK = ['gpu_type', 'zone'] as const;
/** The kinds of gpux_errors_total (docs/metrics.md). */
export type ErrorKind = 'http_5xx' | 'commit_failed' | 'grpc_internal';

export class ExchangeMetrics {
  readonly registry = new Registry();

  readonly httpDuration = new Histogram({
    name: 'gpux_http_request_duration_seconds',
    help: 'REST requests by route pattern, method and status, from arrival to answer.',
    labelNames: ['method', 'route', 'status'] as const,
    buckets: FAST_BUCKETS,
    registers: [this.registry],
  });

  readonly commitDuration = new Histogram({
    name: 'gpux_commit_duration_seconds',
    help: "The order path's commit groups: one statement writing the batches of every ready book, its commit included.",
    buckets: FAST_BUCKETS,
    registers: [this.registry],
  });

  readonly commitCommands = new Histogram({
    name: 'gpux_commit_commands',
    help: 'Commands (orders, cancels, lease reports, ticks …) per commit group.',
    buckets: BATCH_BUCKETS,
    registers: [this.registry],
  });

  readonly errors = new Counter({
    name: 'gpux_errors_total',
    help: 'Errors by kind: http_5xx (REST answers 5xx), commit_failed (a commit group failed or lost a batch), grpc_internal (agents got INTERNAL).',
    labelNames: ['kind'] as const,
    registers: [this.registry],
  });

  readonly grpcCalls = new Counter({
    name: 'gpux_grpc_calls_total',
    help: "The agents' gRPC calls by method and status code, as answered.",
    labelNames: ['method', 'code'] as const,
    registers: [this.registry],
  });

  readonly leasesEnded = new Counter({
    name: 'gpux_leases_ended_total',
    help: 'Leases ended, by reason (terminated, resold, expired, failed).',
    labelNames: ['reason'] as const,
    registers: [this.registry],
  });

  readonly provisioningDuration = new Histogram({
    name: 'gpux_lease_provisioning_duration_seconds',
    help: "From a lease's start to its agent reporting it ready.",
    buckets: SLOW_BUCKETS,
    registers: [this.registry],
  });

  readonly revocationDuration = new Histogram({
    name: 'gpux_lease_revocation_duration_seconds',
    help: "From a lease's end to its agent confirming every access removed (first confirmation).",
    buckets: SLOW_BUCKETS,
    registers: [this.registry],
  });

  // Read when scraped (scrape.ts).
  readonly orders = this.bookCounter(
    'gpux_orders_total',
    'Orders the book accepted since this process opened it.',
  );
  readonly cancels = this.bookCounter(
    'gpux_cancels_total',
    'Order cancellations in the book (by customers, operators, expiry or the exchange) since this process opened it.',
  );
  readonly fills = this.bookCounter(
    'gpux_fills_total',
    'Fills in the book since it was created (fills.book_seq).',
  );

  readonly depth = this.gauge(
    'gpux_book_depth_gpus',
    'GPUs resting in the book, by side (bid, ask).',
    [...BOOK, 'side'] as const,
  );

  readonly spread = this.gauge(
    'gpux_book_spread_cents',
    'Best ask minus best bid, in cents per GPU-hour; absent while a side is empty.',
    BOOK,
  );

  readonly halted = this.gauge(
    'gpux_book_halted',
    '1 while operators halt the book (POST /v1/admin/books/…/halt), else 0.',
    BOOK,
  );

  readonly owner = this.gauge(
    'gpux_market_owner',
    '1 when this process owns the market (the book and database families come from it), 0 on a standby.',
  );

  readonly leases = this.gauge('gpux_leases', 'Live leases by state (provisioning, active).', [
    'state',
  ] as const);

  readonly provisioningOldest = this.gauge(
    'gpux_leases_provisioning_oldest_seconds',
    'Age (since its start) of the oldest lease still provisioning; 0 when none.',
  );

  readonly provisioningRatio = this.gauge(
    'gpux_leases_provisioning_oldest_ratio',
    'That age over the provisioning timeout (GPUX_PROVISIONING_TIMEOUT_SECONDS): at 1 the lease fails.',
  );

  readonly unconfirmedRevocations = this.gauge(
    'gpux_unconfirmed_revocations',
    'Ended leases whose agent has not yet confirmed their access removed.',
  );

  readonly oldestUnconfirmed = this.gauge(
    'gpux_oldest_unconfirmed_revocation_seconds',
    'How long ago the oldest of them ended; 0 when none.',
  );

  readonly outboxBacklog = this.gauge(
    'gpux_outbox_backlog_events',
    'Events committed and not yet published to the bus (the outbox relay).',
  );

  readonly outboxLag = this.gauge(
    'gpux_outbox_publish_lag_seconds',
    'Age of the oldest event not yet published; 0 when none waits.',
  );

  readonly accountEventQueue = this.gauge(
    'gpux_account_event_queue',
    'Changes whose account events are committed and not yet numbered (account_event_batches).',
  );

  readonly accountEventQueueAge = this.gauge(
    'gpux_account_event_queue_age_seconds',
    'Age of the oldest of them; 0 when none waits.',
  );

  readonly feedStreams = this.gauge(
    'gpux_feed_streams',
    'Live feed streams (GET /v1/stream) open in this process, by what writes them: its feed writer process or the exchange process.',
    ['written_by'],
  );

  readonly nodes = this.gauge(
    'gpux_nodes',
    "Providers' nodes by status (available: no agent yet; online; offline).",
    ['status'] as const,
  );

  readonly heartbeatAge = this.gauge(
    'gpux_cluster_heartbeat_age_seconds',
    "Seconds since a cluster's last heartbeat as written to the database (written at least every 30 s while heartbeats come).",
    ['cluster_id'] as const,
  );

  /** The agents' durations, as providers/provider-leases.ts observes them. */
  readonly leaseObserver: LeaseObserver = {
    provisioned: (s) => this.provisioningDuration.observe(s),
    revoked: (s) => this.revocationDuration.observe(s),
  };

  /** For grpc-server.ts's ServiceContext.onCall, in this process. */
  // And for agent-host.ts: the agents' service process tells its counts.
  readonly onGrpcCall = (method: string, code: grpcStatus, n = 1): void => {
    this.grpcCalls.inc({ method, code: grpcStatus[code] ?? String(code) }, n);
    if (code === grpcStatus.INTERNAL) this.errors.inc({ kind: 'grpc_internal' }, n);
  };

  /** For Market.onCommit: once per commit group, never per order. */
  readonly onCommit = (
    commands: number,
    writeSeconds: number,
    failed: boolean,
    leases: Iterable<LeaseRow>,
  ): void => {
    this.commitDuration.observe(writeSeconds);
    this.commitCommands.observe(commands);
    if (failed) this.errors.inc({ kind: 'commit_failed' });
    for (const l of leases)
      if (l.end_reason !== null) this.leasesEnded.inc({ reason: l.end_reason });
  };

  constructor() {
    // Present from the start, so a rate() has its zero.
    for (const kind of ['http_5xx', 'commit_failed', 'grpc_internal'] satisfies ErrorKind[])
      this.errors.inc({ kind }, 0);
    for (const reason of ['terminated', 'resold', 'expired', 'failed'])
      this.leasesEnded.inc({ reason }, 0);
  }

  /**
   * Times every request of `app` by its route's pattern (never the raw URL:
   * ids would make a series each); a request no route matched is "unmatched".
   */
  instrument(app: FastifyInstance): void {
    app.addHook('onResponse', (request, reply, done) => {
      const status = reply.statusCode;
      this.httpDuration.observe(
        { method: request.method, route: request.routeOptions.url ?? 'unmatched', status },
        reply.elapsedTime / 1000,
      );
      if (status >= 500) this.errors.inc({ kind: 'http_5xx' });
      done();
    });
  }

  private gauge<L extends string = never>(
    name: string,
    help: string,
    labelNames: readonly L[] = [],
  ): Gauge<L> {
    return new Gauge({ name, help, labelNames, registers: [this.registry] });
  }

  private bookCounter(name: string, help: string): Counter<'gpu_type' | 'zone'> {
    return new Counter({ name, help, labelNames: BOOK, registers: [this.registry] });
  }
}
