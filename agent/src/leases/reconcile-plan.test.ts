import { describe, expect, it } from 'vitest';

import type { LeaseSpec } from '../provisioner/lease-spec.js';
import { planReconciliation } from './reconcile-plan.js';
import type { LocalWorkspace, ReconcileInput } from './reconcile-plan.js';

const AS_OF = 1_000_000;

function spec(leaseId: string, startMs = AS_OF - 10_000, endMs = AS_OF + 3_600_000): LeaseSpec {
  return {
    leaseId,
    namespace: `gpux-${leaseId}`,
    leaseUser: leaseId,
    nodes: [{ hostname: 'n1', sshUser: `${leaseId}-1` }],
    gpuCount: 8,
    startMs,
    endMs,
    sshPublicKeys: [],
    sourceLeaseId: null,
  };
}

function ws(
  leaseId: string,
  ready = true,
  startMs: number | undefined = AS_OF - 10_000,
): LocalWorkspace {
  return { leaseId, startMs, endMs: AS_OF + 3_600_000, ready };
}

function input(over: Partial<ReconcileInput>): ReconcileInput {
  return {
    listed: [],
    asOfMs: AS_OF,
    workspaces: [],
    tombstoned: new Set(),
    reportedAtMs: new Map(),
    listSentAtMs: 500,
    nowMs: AS_OF,
    ...over,
  };
}

describe('reconciliation plan (D30)', () => {
  it('given a workspace whose lease is not live, when reconciled, then it is revoked', () => {
    const plan = planReconciliation(input({ workspaces: [ws('lse_a')] }));
    expect(plan.revoke).toEqual([{ leaseId: 'lse_a', endMs: AS_OF + 3_600_000 }]);
    expect(plan.provision).toEqual([]);
  });

  it('never revokes a live lease: listed leases keep their workspace', () => {
    const plan = planReconciliation(
      input({
        listed: [{ spec: spec('lse_a'), status: 'active' }],
        workspaces: [ws('lse_a')],
        reportedAtMs: new Map([['lse_a', 100]]),
      }),
    );
    expect(plan).toEqual({ revoke: [], provision: [], report: [], markReported: [], stale: [] });
  });

  it('a workspace of a lease that started after the list was read is left alone', () => {
    const plan = planReconciliation(input({ workspaces: [ws('lse_new', true, AS_OF + 1)] }));
    expect(plan.revoke).toEqual([]);
  });

  it('a workspace whose record is unreadable and that no live lease claims is revoked', () => {
    const plan = planReconciliation(input({ workspaces: [ws('lse_x', false, undefined)] }));
    expect(plan.revoke.map((r) => r.leaseId)).toEqual(['lse_x']);
  });

  it('a live lease with no workspace, or a half-made one, is provisioned', () => {
    const plan = planReconciliation(
      input({
        listed: [
          { spec: spec('lse_a'), status: 'provisioning' },
          { spec: spec('lse_b'), status: 'provisioning' },
        ],
        workspaces: [ws('lse_b', false)],
      }),
    );
    expect(plan.provision.map((l) => l.leaseId)).toEqual(['lse_a', 'lse_b']);
    expect(plan.revoke).toEqual([]);
  });

  it('a lease revoked here is never provisioned from a list read before its revoke', () => {
    const plan = planReconciliation(
      input({
        listed: [
          { spec: spec('lse_a'), status: 'active' },
          { spec: spec('lse_b'), status: 'provisioning' },
        ],
        workspaces: [ws('lse_a')],
        tombstoned: new Set(['lse_a', 'lse_b']),
      }),
    );
    expect(plan.provision).toEqual([]);
    expect(plan.revoke.map((r) => r.leaseId)).toEqual(['lse_a']);
  });

  it('a live lease past its end is not provisioned', () => {
    const plan = planReconciliation(
      input({ listed: [{ spec: spec('lse_a', 0, AS_OF - 1), status: 'provisioning' }] }),
    );
    expect(plan.provision).toEqual([]);
  });

  it('a finished workspace never reported is reported; one the exchange shows active is only marked', () => {
    const plan = planReconciliation(
      input({
        listed: [
          { spec: spec('lse_a'), status: 'provisioning' },
          { spec: spec('lse_b'), status: 'active' },
        ],
        workspaces: [ws('lse_a'), ws('lse_b')],
      }),
    );
    expect(plan.report.map((l) => l.leaseId)).toEqual(['lse_a']);
    expect(plan.markReported).toEqual(['lse_b']);
  });

  it('an active lease whose access changed after its last report (a refreshed token, D28) is stale; one reported since is not', () => {
    const listed = [{ spec: spec('lse_a'), status: 'active' }];
    const workspaces = [{ ...ws('lse_a'), accessMadeMs: 700 }];
    const cutOff = planReconciliation(
      input({ listed, workspaces, reportedAtMs: new Map([['lse_a', 400]]) }),
    );
    expect(cutOff.stale.map((l) => l.leaseId)).toEqual(['lse_a']);
    expect(cutOff.report).toEqual([]);
    const reported = planReconciliation(
      input({ listed, workspaces, reportedAtMs: new Map([['lse_a', 700]]) }),
    );
    expect(reported.stale).toEqual([]);
    // Not marked here (a crash between the report and its mark): reported, not
    // marked, since the mark would also cover a refresh never reported.
    const unmarked = planReconciliation(input({ listed, workspaces }));
    expect(unmarked.stale.map((l) => l.leaseId)).toEqual(['lse_a']);
    expect(unmarked.markReported).toEqual([]);
    // An access that never changes on its own is never stale.
    const fixed = planReconciliation(
      input({ listed, workspaces: [ws('lse_a')], reportedAtMs: new Map([['lse_a', 400]]) }),
    );
    expect(fixed.stale).toEqual([]);
  });

  it('reported before the list was asked for and still provisioning: reported again', () => {
    const listed = [{ spec: spec('lse_a'), status: 'provisioning' }];
    const workspaces = [ws('lse_a')];
    const lost = planReconciliation(
      input({ listed, workspaces, reportedAtMs: new Map([['lse_a', 400]]), listSentAtMs: 500 }),
    );
    expect(lost.report.map((l) => l.leaseId)).toEqual(['lse_a']);
    // Reported while the list was on its way: the list may predate the report.
    const racing = planReconciliation(
      input({ listed, workspaces, reportedAtMs: new Map([['lse_a', 600]]), listSentAtMs: 500 }),
    );
    expect(racing.report).toEqual([]);
  });
});
