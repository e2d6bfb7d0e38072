// The operators' lease actions (issue 21, docs/api/admin.md):
//   POST /v1/admin/leases/{id}/fail    a lease stuck provisioning fails, refunded in full (D25)
//   POST /v1/admin/leases/{id}/revoke  a live lease ends now, the rest refunded (D26)
// Both go through the lease's book's single writer, as the provisioning
// timeout and a customer's termination do, and the agent is told to revoke
// (the lease's revoke event). The audit row is part of the book's write
// batch (ChangeSet.audits): the lease's end, its refund and the row commit
// in one statement or not at all.

import { GpuxError, formatDollars } from '@gpux/shared';
import type { FastifyPluginCallbackTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';

import { auditRow, reasonOf } from '../admin/audit.js';
import type { AuditState } from '../admin/audit.js';
import { operatorOf } from '../auth/authenticate.js';
import { IdParams } from '../http/schema.js';
import { leaseAccessOf, leaseNodesOf } from '../market/queries.js';
import { refusalError } from '../market/refusal.js';
import type { LeaseRow } from '../market/rows.js';
import type { RouteContext } from '../services.js';
import { Reason } from '../views/admin.js';
import { LeaseDetailSchema, leaseDetailView } from '../views/leases.js';

const LeaseActionBody = Type.Object(
  { reason: Reason() },
  { title: 'AdminLeaseAction', additionalProperties: false },
);

/** What the audit log keeps of a lease, before and after (dollars, ISO times). */
function leaseState(l: LeaseRow): AuditState {
  return {
    status: l.status,
    account_id: l.account_id,
    ended_at: l.ended_ms === null ? null : new Date(l.ended_ms).toISOString(),
    refund: l.refund_cents === null ? null : formatDollars(l.refund_cents),
  };
}

const ACTIONS = {
  fail: {
    audit: 'lease.fail',
    summary: 'Fail a lease stuck provisioning: refunded in full, the agent told to revoke',
    errors: ['not_found', 'lease_not_active', 'lease_not_provisioning'],
    logged: 'lease failed by an operator',
  },
  revoke: {
    audit: 'lease.revoke',
    summary: 'Force-revoke a live lease: access revoked, the remaining time refunded',
    errors: ['not_found', 'lease_not_active'],
    logged: 'lease revoked by an operator',
  },
} as const;

export const adminLeaseRoutes: FastifyPluginCallbackTypebox<{ ctx: RouteContext }> = (
  app,
  { ctx },
  done,
) => {
  for (const action of ['fail', 'revoke'] as const) {
    const a = ACTIONS[action];
    app.post(
      `/v1/admin/leases/:id/${action}`,
      {
        config: { access: 'admin', errors: [...a.errors] },
        schema: {
          summary: a.summary,
          tags: ['admin'],
          params: IdParams,
          body: LeaseActionBody,
          response: { 200: LeaseDetailSchema },
        },
      },
      async (request) => {
        const { id } = request.params;
        const reason = reasonOf(request.body.reason);
        const operator = operatorOf(request);
        const [lease] = await ctx.db.query<LeaseRow>('SELECT * FROM leases WHERE id = $1', [id]);
        if (lease === undefined) throw new GpuxError('not_found', `no lease ${id}`);
        if (lease.status !== 'provisioning' && lease.status !== 'active') {
          throw new GpuxError('lease_not_active', `lease ${id} is ${lease.status}`);
        }
        const { market } = ctx;
        const outcome = await market.writer(lease.gpu_type, lease.zone).submit((state, changes) => {
          const o = state.operatorEnd(id, action, market.clock.now(), changes);
          if (o.ok) {
            changes.audits.push(
              auditRow({
                operator,
                action: a.audit,
                targetType: 'lease',
                targetId: id,
                reason,
                before: leaseState(o.before),
                after: leaseState(o.lease),
              }),
            );
          }
          return o;
        });
        if (!outcome.ok) throw refusalError(outcome);
        const ended = outcome.lease;
        request.log.info(
          {
            lease_id: id,
            account_id: ended.account_id,
            cluster_id: ended.cluster_id,
            refund_cents: ended.refund_cents,
            reason,
          },
          a.logged,
        );
        const [row] = await ctx.db.query<LeaseRow>('SELECT * FROM leases WHERE id = $1', [id]);
        const [nodes, access] = await Promise.all([
          leaseNodesOf(ctx.db, id),
          leaseAccessOf(ctx.db, id),
        ]);
        return leaseDetailView(ctx.market.clock.now(), row ?? ended, nodes, access);
      },
    );
  }
  done();
};
