// D30 reconciliation as a pure decision: the exchange's live leases against
// the workspaces that exist here and the leases this agent saw revoked.
// Events only start work early; this is what makes the two sides agree.

import type { LeaseSpec } from '../provisioner/lease-spec.js';
import type { Workspace } from '../provisioner/provisioner.js';

export interface ListedLease {
  readonly spec: LeaseSpec;
  /** "provisioning" or "active" (D25). */
  readonly status: string;
}

export interface LocalWorkspace {
  readonly leaseId: string;
  /** The lease's start (exchange clock); undefined when its record is unreadable. */
  readonly startMs: number | undefined;
  readonly endMs: number | undefined;
  /** Provisioning finished. */
  readonly ready: boolean;
  /** When its access last changed on its own (a refreshed token, D28; agent clock). */
  readonly accessMadeMs?: number | undefined;
}

/** What the plan needs to know of a workspace the provisioner lists. */
export function localWorkspace(w: Workspace): LocalWorkspace {
  return {
    leaseId: w.leaseId,
    startMs: w.lease?.startMs,
    endMs: w.lease?.endMs,
    ready: w.access !== undefined,
    accessMadeMs: w.access?.madeMs,
  };
}

export interface ReconcileInput {
  /** ListLeases: every live lease of the cluster. */
  readonly listed: readonly ListedLease[];
  /** ListLeases as_of (exchange clock). */
  readonly asOfMs: number;
  readonly workspaces: readonly LocalWorkspace[];
  readonly tombstoned: ReadonlySet<string>;
  /** Leases whose ReportProvisioned was answered, and when (agent clock). */
  readonly reportedAtMs: ReadonlyMap<string, number>;
  /** When the ListLeases call was sent (agent clock). */
  readonly listSentAtMs: number;
  /** Exchange clock, near enough: only compared with lease ends. */
  readonly nowMs: number;
}

export interface ReconcilePlan {
  /** Workspaces with no live lease: revoke (with the lease's end when known, for the tombstone). */
  readonly revoke: readonly { readonly leaseId: string; readonly endMs: number | undefined }[];
  /** Live leases with no finished workspace. */
  readonly provision: readonly LeaseSpec[];
  /** Finished workspaces whose lease the exchange still shows as provisioning. */
  readonly report: readonly LeaseSpec[];
  /**
   * Finished workspaces the exchange already shows as active, not marked
   * here yet, whose access does not change on its own.
   */
  readonly markReported: readonly string[];
  /**
   * Finished workspaces the exchange shows as active whose access changed
   * after its last report (or that have no report mark): a token refreshed
   * (D28) and stored, its report cut off by a restart. Provisioned again, so
   * the worker reports the access the exchange has not seen before the old
   * token expires.
   */
  readonly stale: readonly LeaseSpec[];
}

export function planReconciliation(input: ReconcileInput): ReconcilePlan {
  const listed = new Map(input.listed.map((l) => [l.spec.leaseId, l]));
  const local = new Map(input.workspaces.map((w) => [w.leaseId, w]));

  const revoke = input.workspaces
    .filter((w) => {
      if (input.tombstoned.has(w.leaseId)) return true;
      if (listed.has(w.leaseId)) return false;
      // A lease that started after the list was read may just not be in it
      // yet: its provision event can be here before the exchange's list.
      return w.startMs === undefined || w.startMs < input.asOfMs;
    })
    .map((w) => ({ leaseId: w.leaseId, endMs: w.endMs }));

  const provision: LeaseSpec[] = [];
  const report: LeaseSpec[] = [];
  const markReported: string[] = [];
  const stale: LeaseSpec[] = [];
  for (const l of input.listed) {
    const id = l.spec.leaseId;
    if (input.tombstoned.has(id)) continue;
    const w = local.get(id);
    if (w === undefined || !w.ready) {
      if (l.spec.endMs > input.nowMs) provision.push(l.spec);
      continue;
    }
    const reportedAt = input.reportedAtMs.get(id);
    if (l.status === 'provisioning') {
      // Not reported yet (a crash between provisioning and the report), or
      // reported before this list was asked for and still not active: the
      // exchange lost the report. Reported while the list was on its way: wait.
      if (reportedAt === undefined || reportedAt < input.listSentAtMs) report.push(l.spec);
    } else if (w.accessMadeMs !== undefined && (reportedAt ?? 0) < w.accessMadeMs) {
      // Marking it now would also cover an access refreshed after the report
      // the exchange answered: report it instead (once more at worst).
      stale.push(l.spec);
    } else if (reportedAt === undefined) {
      markReported.push(id);
    }
  }
  return { revoke, provision, report, markReported, stale };
}
