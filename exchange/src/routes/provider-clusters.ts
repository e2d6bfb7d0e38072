// GET /v1/clusters and GET /v1/clusters/{id} (issue 23): a provider's own
// fleet, read with its own token (scope `provider`): node status and
// heartbeats, open sells, the leases sold on each cluster (buyers hidden),
// earnings and payouts. The operators' view of every provider is
// GET /v1/admin/fleet.

import type { FastifyPluginCallbackTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';

import { callerOf } from '../auth/authenticate.js';
import { ownCluster, ownFleet } from '../providers/own-fleet.js';
import type { RouteContext } from '../services.js';
import { OwnClusterSchema, OwnFleetSchema } from '../views/provider-fleet.js';

const ClusterParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 64 }) });

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

  done();
};
