// The agent's Prometheus metrics (issue 23, docs/metrics.md), served at
// GET /metrics on GPUX_METRICS_LISTEN: its calls to the exchange by method
// and code (heartbeats among them), reconciliation actions, lease
// provisioning and revocation as the agent does them, SSH sessions open.
// No lease id is a label; the cluster is the agent's own.

import { createServer } from 'node:http';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';

import { status } from '@grpc/grpc-js';
import { Counter, Gauge, Histogram, Registry } from 'prom-client';

import { ExchangeError } from './exchange/exchange-client.js';
import type { ExchangeApi } from './exchange/exchange-client.js';
import type { ReconcileResult } from './leases/reconciler.js';
import { probeAnswer } from './probes.js';
import type { Readiness } from './probes.js';
import type { HostPort } from './settings.js';

/** Seconds: a call to the exchange (1 ms … 10 s). */
const CALL_BUCKETS = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10];
/** Seconds: provisioning and revocation (10 ms … 10 min). */
const LEASE_BUCKETS = [0.01, 0.05, 0.1, 0.5, 1, 5, 15, 30, 60, 120, 300, 600];

/** ExchangeApi's methods as the exchange's service names them. */
const METHODS = {
  attach: 'Attach',
  heartbeat: 'Heartbeat',
  listSells: 'ListSells',
  publishSell: 'PublishSell',
  withdrawSell: 'WithdrawSell',
  listLeases: 'ListLeases',
  reportProvisioned: 'ReportProvisioned',
  reportRevoked: 'ReportRevoked',
  reportFailed: 'ReportFailed',
} as const satisfies Record<Exclude<keyof ExchangeApi, 'close'>, string>;

export class AgentMetrics {
  readonly registry = new Registry();

  readonly calls = new Counter({
    name: 'gpux_agent_grpc_calls_total',
    help: 'Calls to the exchange by method and gRPC status code (UNAVAILABLE: it was not reached).',
    labelNames: ['method', 'code'] as const,
    registers: [this.registry],
  });

  readonly callDuration = new Histogram({
    name: 'gpux_agent_grpc_call_duration_seconds',
    help: 'Calls to the exchange by method, until answered or failed.',
    labelNames: ['method'] as const,
    buckets: CALL_BUCKETS,
    registers: [this.registry],
  });

  readonly heartbeats = new Counter({
    name: 'gpux_agent_heartbeats_total',
    help: 'Heartbeats sent, by result (ok: the exchange answered; failed).',
    labelNames: ['result'] as const,
    registers: [this.registry],
  });

  readonly lastHeartbeat = new Gauge({
    name: 'gpux_agent_last_heartbeat_success_timestamp_seconds',
    help: 'When the exchange last answered a heartbeat (Unix time); 0 before the first.',
    registers: [this.registry],
  });

  readonly reconciliations = new Counter({
    name: 'gpux_agent_reconciliations_total',
    help: 'Reconciliation rounds, by result (ok; failed: the lease list could not be read).',
    labelNames: ['result'] as const,
    registers: [this.registry],
  });

  readonly reconcileActions = new Counter({
    name: 'gpux_agent_reconciliation_actions_total',
    help: 'What reconciliation did: revoke, provision, report, and failure (a step that failed at its first try).',
    labelNames: ['action'] as const,
    registers: [this.registry],
  });

  readonly provisioning = new Histogram({
    name: 'gpux_agent_lease_provisioning_duration_seconds',
    help: "A lease's provisioning here: the provisioner's work until the access exists (not its report).",
    buckets: LEASE_BUCKETS,
    registers: [this.registry],
  });

  readonly revocation = new Histogram({
    name: 'gpux_agent_lease_revocation_duration_seconds',
    help: "A lease's revocation here: SSH sessions closed, processes ended, the workspace removed (not its report).",
    buckets: LEASE_BUCKETS,
    registers: [this.registry],
  });

  readonly sshSessions = new Gauge({
    name: 'gpux_agent_ssh_sessions_open',
    help: 'Authenticated SSH connections to the gateway now.',
    registers: [this.registry],
  });

  constructor() {
    // Present from the start, so a rate() has its zero.
    for (const result of ['ok', 'failed']) {
      this.heartbeats.inc({ result }, 0);
      this.reconciliations.inc({ result }, 0);
    }
    for (const action of ['revoke', 'provision', 'report', 'failure'])
      this.reconcileActions.inc({ action }, 0);
    this.lastHeartbeat.set(0);
  }

  /** After each reconciliation round (leases/reconciler.ts). */
  reconciled(r: ReconcileResult): void {
    this.reconciliations.inc({ result: r.ok ? 'ok' : 'failed' });
    if (r.revoked > 0) this.reconcileActions.inc({ action: 'revoke' }, r.revoked);
    if (r.provisioned > 0) this.reconcileActions.inc({ action: 'provision' }, r.provisioned);
    if (r.reported > 0) this.reconcileActions.inc({ action: 'report' }, r.reported);
    if (r.failures > 0) this.reconcileActions.inc({ action: 'failure' }, r.failures);
  }

  /** The lease worker's durations (leases/lease-worker.ts). */
  readonly leaseObserver = {
    provisioned: (seconds: number): void => this.provisioning.observe(seconds),
    revoked: (seconds: number): void => this.revocation.observe(seconds),
  };

  /** `exchange`, its every call counted and timed here. */
  instrument(exchange: ExchangeApi): ExchangeApi {
    const timed = <A extends unknown[], R>(
      key: keyof typeof METHODS,
      call: (...args: A) => Promise<R>,
    ): ((...args: A) => Promise<R>) => {
      const method = METHODS[key];
      return async (...args: A): Promise<R> => {
        const end = this.callDuration.startTimer({ method });
        try {
          const res = await call(...args);
          this.answered(method, status.OK);
          return res;
        } catch (err) {
          this.answered(method, err instanceof ExchangeError ? err.code : status.UNKNOWN);
          throw err;
        } finally {
          end();
        }
      };
    };
    return {
      attach: timed('attach', (r) => exchange.attach(r)),
      heartbeat: timed('heartbeat', (r) => exchange.heartbeat(r)),
      listSells: timed('listSells', (c) => exchange.listSells(c)),
      publishSell: timed('publishSell', (r) => exchange.publishSell(r)),
      withdrawSell: timed('withdrawSell', (c, o) => exchange.withdrawSell(c, o)),
      listLeases: timed('listLeases', (c) => exchange.listLeases(c)),
      reportProvisioned: timed('reportProvisioned', (r) => exchange.reportProvisioned(r)),
      reportRevoked: timed('reportRevoked', (c, l) => exchange.reportRevoked(c, l)),
      reportFailed: timed('reportFailed', (c, l, why) => exchange.reportFailed(c, l, why)),
      close: () => exchange.close(),
    };
  }

  private answered(method: string, code: status): void {
    this.calls.inc({ method, code: status[code] ?? String(code) });
    if (method !== 'Heartbeat') return;
    this.heartbeats.inc({ result: code === status.OK ? 'ok' : 'failed' });
    if (code === status.OK) this.lastHeartbeat.set(Date.now() / 1000);
  }
}

export interface MetricsServer {
  readonly address: AddressInfo;
  close(): Promise<void>;
}

export interface ServeOptions {
  /** Runs before each scrape (gauges read from the agent's parts). */
  readonly before?: () => void;
  /** GET /readyz's answer (probes.ts); without it there are no probes. */
  readonly readiness?: () => Readiness;
}

/**
 * GET /metrics on `listen`, and the probes GET /healthz and GET /readyz
 * (probes.ts); anything else is 404.
 */
export async function serveMetrics(
  metrics: AgentMetrics,
  listen: HostPort,
  o: ServeOptions = {},
): Promise<MetricsServer> {
  const server: Server = createServer((req, res) => {
    const path = (req.url ?? '').split('?')[0] ?? '';
    const probe =
      req.method !== 'GET' || o.readiness === undefined
        ? undefined
        : probeAnswer(path, o.readiness);
    if (probe !== undefined) {
      res
        .writeHead(probe.status, {
          'content-type': 'application/json; charset=utf-8',
          'cache-control': 'no-store',
        })
        .end(probe.body);
      return;
    }
    if (req.method !== 'GET' || path !== '/metrics') {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found\n');
      return;
    }
    o.before?.();
    metrics.registry.metrics().then(
      (text) => res.writeHead(200, { 'content-type': metrics.registry.contentType }).end(text),
      (err: unknown) =>
        res.writeHead(500, { 'content-type': 'text/plain' }).end(`${String(err)}\n`),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(listen.port, listen.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  return {
    address: server.address() as AddressInfo,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
