// The operators' cluster actions (issue 21, docs/api/admin.md):
//   POST /v1/admin/clusters/{id}/cordon    its sells and resales withdrawn, no new ones
//   POST /v1/admin/clusters/{id}/uncordon  its agent lists its free nodes again
// Both are a command of the cluster's book (market/cordon.ts), made as a
// provider's own cordon is (market/cordon-cluster.ts), so the
// withdrawals, clusters.cordoned_at and the audit row (ChangeSet.audits)
// commit in one statement or not at all, and no sell can slip in between the
// withdrawals and the cordon.

import { GpuxError } from '@gpux/shared';
import type { FastifyPluginCallbackTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import { Type } from '@sinclair/typebox';

import { listClusters } from '../accounts/clusters.js';
import type { ClusterView } from '../accounts/clusters.js';
import { reasonOf } from '../admin/audit.js';
import { operatorOf } from '../auth/authenticate.js';
import { IdParams } from '../http/schema.js';
import type { CordonChange } from '../market/cordon.js';
import { cordonCluster } from '../market/cordon-cluster.js';
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

export const adminClusterRoutes: FastifyPluginCallbackTypebox<{ ctx: RouteContext }> = (
  app,
  { ctx },
  done,
) => {
  /** Cordon or uncordon through the cluster's book (market/cordon-cluster.ts); the cluster as it is then. */
  async function cordon(
    request: FastifyRequest,
    id: string,
    given: string,
    cordoned: boolean,
  ): Promise<{ cluster: ClusterView; change: CordonChange }> {
    const change = await cordonCluster(ctx.db, ctx.market, request.log, {
      clusterId: id,
      cordoned,
      by: 'operator',
      actor: operatorOf(request),
      reason: reasonOf(given),
    });
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
