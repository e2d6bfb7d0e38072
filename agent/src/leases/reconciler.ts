// Runs the D30 reconciliation at start and every few seconds: reads the
// exchange's live leases and the workspaces here, plans (reconcile-plan.ts)
// and carries the plan out through the lease worker. If the exchange cannot
// be reached, nothing is revoked: an agent restart never tears down a live lease.

import { isRepeatedRefusal } from '../exchange/exchange-client.js';
import type { ExchangeApi } from '../exchange/exchange-client.js';
import type { Logger } from '../logger.js';
import { leaseSpecFromProto } from '../provisioner/lease-spec.js';
import type { Provisioner } from '../provisioner/provisioner.js';
import type { ReportMarks } from '../state/report-marks.js';
import type { Tombstones } from '../state/tombstones.js';
import type { LeaseWorker } from './lease-worker.js';
import { planReconciliation } from './reconcile-plan.js';

export interface ReconcileResult {
  readonly atMs: number;
  /** false: the exchange's lease list could not be read, nothing was done. */
  readonly ok: boolean;
  readonly error?: string;
  readonly revoked: number;
  readonly provisioned: number;
  readonly reported: number;
  /** Steps that failed (each logged); tried again next time. */
  readonly failures: number;
}

export interface ReconcilerOptions<B> {
  readonly clusterId: string;
  readonly exchange: ExchangeApi;
  readonly provisioner: Provisioner<B>;
  readonly worker: LeaseWorker<B>;
  readonly tombstones: Tombstones;
  readonly reports: ReportMarks;
  readonly logger: Logger;
  readonly now?: () => number;
}

export class Reconciler<B> {
  private readonly now: () => number;

  constructor(private readonly o: ReconcilerOptions<B>) {
    this.now = o.now ?? Date.now;
  }

  async run(): Promise<ReconcileResult> {
    const atMs = this.now();
    await this.o.tombstones.prune(atMs);
    const listSentAtMs = this.now();
    let listed;
    try {
      listed = await this.o.exchange.listLeases(this.o.clusterId);
    } catch (err) {
      if (!isRepeatedRefusal(err)) {
        this.o.logger.warn({ err }, 'reconciliation skipped: the lease list could not be read');
      }
      const error = err instanceof Error ? err.message : String(err);
      return { atMs, ok: false, error, revoked: 0, provisioned: 0, reported: 0, failures: 0 };
    }
    const workspaces = await this.o.provisioner.list();
    const live = listed.leases.map((l) => ({ spec: leaseSpecFromProto(l), status: l.status }));
    const ids = [...workspaces.map((w) => w.leaseId), ...live.map((l) => l.spec.leaseId)];
    const plan = planReconciliation({
      listed: live,
      asOfMs: listed.asOf?.getTime() ?? 0,
      workspaces: workspaces.map((w) => ({
        leaseId: w.leaseId,
        startMs: w.lease?.startMs,
        endMs: w.lease?.endMs,
        ready: w.access !== undefined,
        accessMadeMs: w.access?.madeMs,
      })),
      tombstoned: new Set(ids.filter((id) => this.o.tombstones.has(id))),
      reportedAtMs: new Map(
        this.o.reports.leaseIds().map((id) => [id, this.o.reports.get(id)?.atMs ?? 0] as const),
      ),
      listSentAtMs,
      nowMs: this.now(),
    });

    let failures = 0;
    const attempt = async (what: string, leaseId: string, step: () => Promise<unknown>) => {
      try {
        await step();
        return true;
      } catch (err) {
        failures++;
        this.o.logger.warn({ leaseId, err }, `reconciliation: ${what} failed; trying again later`);
        return false;
      }
    };
    let revoked = 0;
    for (const r of plan.revoke) {
      this.o.logger.info({ leaseId: r.leaseId }, 'reconciliation: workspace without a live lease');
      const reason = this.o.tombstones.get(r.leaseId)?.reason ?? 'ended';
      if (
        await attempt('revoke', r.leaseId, () =>
          this.o.worker.revoke(r.leaseId, {
            reason,
            atMs: listed.asOf?.getTime() ?? atMs,
            endMs: r.endMs,
          }),
        )
      ) {
        revoked++;
      }
    }
    let provisioned = 0;
    for (const spec of plan.provision) {
      this.o.logger.info(
        { leaseId: spec.leaseId },
        'reconciliation: live lease without a workspace',
      );
      if (await attempt('provision', spec.leaseId, () => this.o.worker.provision(spec)))
        provisioned++;
    }
    let reported = 0;
    for (const spec of plan.report) {
      if (await attempt('report', spec.leaseId, () => this.o.worker.provision(spec, true)))
        reported++;
    }
    for (const spec of plan.stale) {
      // Not forced: the worker reports only if its mark is still older than the access.
      let outcome: string | undefined;
      await attempt(
        'report',
        spec.leaseId,
        async () => (outcome = await this.o.worker.provision(spec)),
      );
      if (outcome === 'reported') reported++;
    }
    for (const id of plan.markReported) {
      await attempt('mark reported', id, () => this.o.worker.markReported(id));
    }
    return { atMs, ok: true, revoked, provisioned, reported, failures };
  }
}
