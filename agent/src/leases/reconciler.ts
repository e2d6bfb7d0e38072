// Runs the D30 reconciliation at start and every few seconds: reads the
// exchange's live leases and the workspaces here, plans (reconcile-plan.ts)
// and hands the plan to the lease queue, revocations first, waiting for each
// lease's first try (the queue retries what failed, with its one policy). If
// the exchange cannot be reached, nothing is revoked: an agent restart never
// tears down a live lease.

import { isRepeatedRefusal } from '../exchange/exchange-client.js';
import type { ExchangeApi } from '../exchange/exchange-client.js';
import type { Logger } from '../logger.js';
import { leaseSpecFromProto } from '../provisioner/lease-spec.js';
import type { Provisioner } from '../provisioner/provisioner.js';
import type { ReportMarks } from '../state/report-marks.js';
import type { Tombstones } from '../state/tombstones.js';
import type { LeaseQueue, LeaseWork, LeaseWorkDone } from './lease-queue.js';
import { localWorkspace, planReconciliation } from './reconcile-plan.js';

export interface ReconcileResult {
  readonly atMs: number;
  /** false: the exchange's lease list could not be read, nothing was done. */
  readonly ok: boolean;
  readonly error?: string;
  readonly revoked: number;
  readonly provisioned: number;
  readonly reported: number;
  /** Steps that failed at their first try (each logged); the lease queue tries them again. */
  readonly failures: number;
}

export interface ReconcilerOptions {
  readonly clusterId: string;
  readonly exchange: ExchangeApi;
  readonly provisioner: Provisioner;
  readonly leases: LeaseQueue;
  readonly tombstones: Tombstones;
  readonly reports: ReportMarks;
  readonly logger: Logger;
  readonly now?: () => number;
  /** Every round's result (metrics.ts counts its actions). */
  readonly onResult?: (r: ReconcileResult) => void;
}

export class Reconciler {
  private readonly now: () => number;

  constructor(private readonly o: ReconcilerOptions) {
    this.now = o.now ?? Date.now;
  }

  async run(): Promise<ReconcileResult> {
    const r = await this.round();
    this.o.onResult?.(r);
    return r;
  }

  private async round(): Promise<ReconcileResult> {
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
      workspaces: workspaces.map(localWorkspace),
      tombstoned: new Set(ids.filter((id) => this.o.tombstones.has(id))),
      reportedAtMs: new Map(
        this.o.reports.leaseIds().map((id) => [id, this.o.reports.get(id)?.atMs ?? 0] as const),
      ),
      listSentAtMs,
      nowMs: this.now(),
    });

    let failures = 0;
    /** Hands one lease's work to the queue; the value of its first try, or undefined if it failed. */
    const attempt = async (
      what: string,
      leaseId: string,
      work: LeaseWork,
    ): Promise<LeaseWorkDone | undefined> => {
      const tried = await this.o.leases.attempt(leaseId, work);
      if (tried.ok) return tried.value;
      failures++;
      // Logged by the queue when it schedules the retry; a stop says nothing new.
      this.o.logger.debug({ leaseId, err: tried.error }, `reconciliation: ${what} not done yet`);
      return undefined;
    };
    const asOfMs = listed.asOf?.getTime() ?? atMs;
    // Revocations first: a resale's new lease may take over the nodes of an old one (D27).
    const revokes = await Promise.all(
      plan.revoke.map((r) => {
        this.o.logger.info(
          { leaseId: r.leaseId },
          'reconciliation: workspace without a live lease',
        );
        const reason = this.o.tombstones.get(r.leaseId)?.reason ?? 'ended';
        return attempt('revoke', r.leaseId, {
          kind: 'revoke',
          why: { reason, atMs: asOfMs, endMs: r.endMs },
        });
      }),
    );
    const provisions = plan.provision.map((spec) => {
      this.o.logger.info(
        { leaseId: spec.leaseId },
        'reconciliation: live lease without a workspace',
      );
      return attempt('provision', spec.leaseId, { kind: 'provision', lease: spec, force: false });
    });
    const reports = plan.report.map((spec) =>
      attempt('report', spec.leaseId, { kind: 'provision', lease: spec, force: true }),
    );
    // Not forced: the worker reports only if its mark is still older than the access.
    const stale = plan.stale.map((spec) =>
      attempt('report', spec.leaseId, { kind: 'provision', lease: spec, force: false }),
    );
    const marks = plan.markReported.map((id) =>
      attempt('mark reported', id, { kind: 'mark-reported' }),
    );
    // A token due for refresh before the lease ends (D28), found at start or after a restart.
    const going = new Set(plan.revoke.map((r) => r.leaseId));
    for (const w of workspaces) {
      const refreshAtMs = w.access?.refreshAtMs;
      if (w.lease === undefined || refreshAtMs === undefined || going.has(w.leaseId)) continue;
      this.o.leases.refreshAt(w.lease, refreshAtMs);
    }
    const count = (done: readonly (LeaseWorkDone | undefined)[], only?: string): number =>
      done.filter(
        (d) =>
          d !== undefined && (only === undefined || (d.kind === 'provision' && d.outcome === only)),
      ).length;
    const revoked = count(revokes);
    const provisioned = count(await Promise.all(provisions));
    const reported =
      count(await Promise.all(reports)) + count(await Promise.all(stale), 'reported');
    await Promise.all(marks);
    return { atMs, ok: true, revoked, provisioned, reported, failures };
  }
}
