// The operators' cluster actions (issue 21, docs/api/admin.md):
//   POST /v1/admin/clusters/{id}/cordon    its sells and resales withdrawn, no new ones
//   POST /v1/admin/clusters/{id}/uncordon  its agent lists its free nodes again
// Both are a command of the cluster's book (market/cordon.ts), so the
// withdrawals, clusters.cordoned_at and the audit row (ChangeSet.audits)
// commit in one statement or not at all, and no sell can slip in between the
// withdrawals and the cordon.

import { GpuxError } from '@gpux/shared';
import type { GpuType, Zone } from '@gpux/shared';
import type { FastifyPluginCallbackTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import { Type } from '@sinclair/typebox';

import { listClusters } from '../accounts/clusters.js';
import type { ClusterView } from '../accounts/clusters.js';
import { auditRow, reasonOf } from '../admin/audit.js';
import { operatorOf } from '../auth/authenticate.js';
import { IdParams } from '../http/schema.js';
import { setCordon } from '../market/cordon.js';
import type { CordonChange } from '../market/cordon.js';
import type { RouteContext } from '../services.js';
import { Reason } from '../views/admin.js';
import { ClusterSchema, clusterView } from '../views/accounts.js';

const CordonBody = Type.Object(
  { reason: Reason() },
  { title: 'AdminClusterAction', additionalProperties: false },
);

const CordonSchema = Type.Object(
  {
    cluster: ClusterSchema,
    cancelled_order_ids: Type.Array(Type.String(), {
      description:
        'The open sells of the cluster and resales of leases on it that this call withdrew (cancel_reason cluster_cordoned); its live leases are kept.',
    }),
  },
  { title: 'ClusterCordon' },
);

const at = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString());

export const adminClusterRoutes: FastifyPluginCallbackTypebox<{ ctx: RouteContext }> = (
  app,
  { ctx },
  done,
) => {
  /** Cordon or uncordon through the cluster's book; the cluster as it is then. */
  async function cordon(
    request: FastifyRequest,
    id: string,
    given: string,
    cordoned: boolean,
  ): Promise<{ cluster: ClusterView; change: CordonChange }> {
    const reason = reasonOf(given);
    const operator = operatorOf(request);
    const [row] = await ctx.db.query<{ gpu_type: GpuType; zone: Zone }>(
      'SELECT gpu_type, zone FROM clusters WHERE id = $1',
      [id],
    );
    if (row === undefined) throw new GpuxError('not_found', `no cluster ${id}`);
    const { market } = ctx;
    const writer = market.writer(row.gpu_type, row.zone);
    await writer.ensureCluster(id);
    const change = await writer.submit((state, changes) => {
      const c = setCordon(state, id, cordoned, market.clock.now(), changes);
      // Cordoning a cordoned cluster (or uncordoning one that is not) records nothing.
      if (c.changed) {
        changes.audits.push(
          auditRow({
            operator,
            action: cordoned ? 'cluster.cordon' : 'cluster.uncordon',
            targetType: 'cluster',
            targetId: id,
            reason,
            before: { cordoned_at: at(c.beforeMs) },
            after: { cordoned_at: at(c.afterMs) },
          }),
        );
      }
      return c;
    });
    request.log.info(
      {
        cluster_id: id,
        changed: change.changed,
        cancelled_orders: change.cancelledOrderIds.length,
        reason,
      },
      cordoned ? 'cluster cordoned' : 'cluster uncordoned',
    );
    const [cluster] = await listClusters(ctx.db, id);
    if (cluster === undefined) throw new GpuxError('not_found', `no cluster ${id}`);
    return { cluster, change };
  }

  app.post(
    '/v1/admin/clusters/:id/cordon',
    {
      config: { access: 'admin', errors: ['not_found'] },
      schema: {
        summary: 'Cordon a cluster: its open sells and resales withdrawn, no new ones taken',
        tags: ['admin'],
        params: IdParams,
        body: CordonBody,
        response: { 200: CordonSchema },
      },
    },
    async (request) => {
      const { cluster, change } = await cordon(
        request,
        request.params.id,
        request.body.reason,
        true,
      );
      return {
        cluster: clusterView(cluster),
        cancelled_order_ids: [...change.cancelledOrderIds],
      };
    },
  );

  app.post(
    '/v1/admin/clusters/:id/uncordon',
    {
      config: { access: 'admin', errors: ['not_found'] },
      schema: {
        summary: 'Uncordon a cluster: its agent lists its free nodes again',
        tags: ['admin'],
        params: IdParams,
        body: CordonBody,
        response: { 200: ClusterSchema },
      },
    },
    async (request) =>
      clusterView((await cordon(request, request.params.id, request.body.reason, false)).cluster),
  );

  done();
};
