// A cordon or uncordon as one call, whoever makes it (market/cordon.ts): the
// operators' POST /v1/admin/clusters/{id}/cordon and /uncordon (issue 21)
// and a provider's POST /v1/clusters/{id}/cordon and /uncordon on its own
// cluster (issue 23). The cluster's book makes it, with the audit row of the
// caller in the same write batch: an operator, or the provider's account
// and token (then `after.cordoned_by` is 'provider').

import { GpuxError } from '@gpux/shared';
import type { GpuType, Zone } from '@gpux/shared';
import type { FastifyBaseLogger } from 'fastify';

import { auditRow } from '../admin/audit.js';
import type { Operator } from '../auth/authenticate.js';
import type { Queryable } from '../db/database.js';
import type { Market } from './market.js';
import { setCordon } from './cordon.js';
import type { CordonChange, CordonedBy } from './cordon.js';

export interface CordonCall {
  readonly clusterId: string;
  readonly cordoned: boolean;
  readonly by: CordonedBy;
  /** The audit log's actor: the operator, or the provider's account and its token. */
  readonly actor: Operator;
  readonly reason: string | null;
  /** A provider's call: only a cluster of this account; another's is not_found (D24). */
  readonly ownerAccountId?: string;
}

const at = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString());

/**
 * Cordons or uncordons the cluster through its book. not_found for a cluster
 * that is not there (or not the owner's); cluster_cordoned when a provider
 * would lift an operator's cordon.
 */
export async function cordonCluster(
  db: Queryable,
  market: Market,
  log: FastifyBaseLogger,
  call: CordonCall,
): Promise<CordonChange> {
  const { clusterId: id, cordoned, by } = call;
  const [row] = await db.query<{ gpu_type: GpuType; zone: Zone }>(
    'SELECT gpu_type, zone FROM clusters WHERE id = $1 AND ($2::text IS NULL OR provider_account_id = $2)',
    [id, call.ownerAccountId ?? null],
  );
  if (row === undefined) throw new GpuxError('not_found', `no cluster ${id}`);
  const writer = market.writer(row.gpu_type, row.zone);
  await writer.ensureCluster(id);
  const change = await writer.submit((state, changes) => {
    const c = setCordon(state, id, cordoned, by, market.clock.now(), changes);
    // Cordoning a cordoned cluster (or uncordoning one that is not) records nothing.
    if (c.changed) {
      changes.audits.push(
        auditRow({
          operator: call.actor,
          action: cordoned ? 'cluster.cordon' : 'cluster.uncordon',
          targetType: 'cluster',
          targetId: id,
          reason: call.reason,
          before: { cordoned_at: at(c.beforeMs), cordoned_by: c.beforeBy },
          after: { cordoned_at: at(c.afterMs), cordoned_by: c.afterBy },
        }),
      );
    }
    return c;
  });
  if (change.refused) {
    throw new GpuxError(
      'cluster_cordoned',
      `cluster ${id} is cordoned by the exchange's operators; only they can lift the cordon`,
    );
  }
  log.info(
    {
      cluster_id: id,
      by,
      changed: change.changed,
      cancelled_orders: change.cancelledOrderIds.length,
      reason: call.reason,
    },
    cordoned ? 'cluster cordoned' : 'cluster uncordoned',
  );
  return change;
}
