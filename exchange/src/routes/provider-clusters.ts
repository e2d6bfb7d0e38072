// GET /v1/clusters and GET /v1/clusters/{id} (issue 23): a provider's own
// fleet, read with its own token (scope `provider`): node status and
// heartbeats, open sells, the leases sold on each cluster (buyers hidden),
// earnings and payouts. The operators' view of every provider is
// GET /v1/admin/fleet.
//
// POST /v1/clusters/{id}/cordon and /uncordon: the provider takes its own
// cluster off the market and puts it back, without an operator: the same
// command of the cluster's book as the operators' cordon
// (market/cordon-cluster.ts), held as the provider's (clusters.cordoned_by);
// its uncordon cannot lift an operator's cordon (409 cluster_cordoned).

import type { FastifyPluginCallbackTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';

import { reasonOf } from '../admin/audit.js';
import { callerOf } from '../auth/authenticate.js';
import { cordonCluster } from '../market/cordon-cluster.js';
import { ownCluster, ownFleet } from '../providers/own-fleet.js';
import type { RouteContext } from '../services.js';
import { Reason } from '../views/admin.js';
import {
  OwnClusterCordonSchema,
  OwnClusterSchema,
  OwnFleetSchema,
} from '../views/provider-fleet.js';

const ClusterParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 64 }) });

const OwnCordonBody = Type.Object(
  { reason: Type.Optional(Reason()) },
  {
    title: 'ClusterCordonRequest',
    additionalProperties: false,
    description: 'Optional: a reason kept in the audit log.',
  },
);

export const providerClusterRoutes: FastifyPluginCallbackTypebox<{ ctx: RouteContext }> = (
  app,
  { ctx },
  done,
) => {
  app.get(
    '/v1/clusters',
    {
      config: { access: 'customer', scope: 'provider', rate: 'query' },
      schema: {
        summary: 'The caller’s clusters and nodes, earnings and payouts (providers)',
        tags: ['providers'],
        response: { 200: OwnFleetSchema },
      },
    },
    async (request) => ownFleet(ctx.db, callerOf(request).accountId, ctx.market.clock.now()),
  );

  app.get(
    '/v1/clusters/:id',
    {
      config: { access: 'customer', scope: 'provider', rate: 'query', errors: ['not_found'] },
      schema: {
        summary: 'One of the caller’s clusters with the leases sold on it (buyers hidden)',
        tags: ['providers'],
        params: ClusterParams,
        response: { 200: OwnClusterSchema },
      },
    },
    async (request) =>
      ownCluster(ctx.db, callerOf(request).accountId, request.params.id, ctx.market.clock.now()),
  );

  for (const cordoned of [true, false]) {
    app.post(
      cordoned ? '/v1/clusters/:id/cordon' : '/v1/clusters/:id/uncordon',
      {
        config: {
          access: 'customer',
          scope: 'provider',
          rate: 'cancel',
          errors: cordoned ? ['not_found'] : ['not_found', 'cluster_cordoned'],
          bodyOptional: true,
        },
        schema: {
          summary: cordoned
            ? 'Cordon one of the caller’s clusters: its open sells and resales withdrawn, no new ones taken, live leases run out (providers)'
            : 'Lift the caller’s own cordon of its cluster: its agent lists its free nodes again (providers)',
          tags: ['providers'],
          params: ClusterParams,
          body: OwnCordonBody,
          response: { 200: OwnClusterCordonSchema },
        },
      },
      async (request) => {
        const caller = callerOf(request);
        const given = request.body.reason;
        const change = await cordonCluster(ctx.db, ctx.market, request.log, {
          clusterId: request.params.id,
          cordoned,
          by: 'provider',
          actor: { actor: caller.accountId, tokenId: caller.tokenId },
          reason: given === undefined ? null : reasonOf(given),
          ownerAccountId: caller.accountId,
        });
        const own = await ownCluster(
          ctx.db,
          caller.accountId,
          request.params.id,
          ctx.market.clock.now(),
        );
        return {
          cluster: own.cluster,
          changed: change.changed,
          cancelled_order_ids: [...change.cancelledOrderIds],
        };
      },
    );
  }

  done();
};
