// The operators' reads the web console is built on (issue 23,
// docs/api/admin.md, docs/console.md); each is an ordinary admin route, with
// a `gpux admin` command:
//   GET /v1/admin/fleet                   providers → clusters → nodes, offline and stale first
//   GET /v1/admin/clusters/{id}/history   status changes of a cluster and its nodes
//   GET /v1/admin/leases?state=…          provisioning, active, ended, failed leases
//   GET /v1/admin/platform/days           the platform's money per day, the ledger's check

import { GpuxError } from '@gpux/shared';
import type { FastifyPluginCallbackTypebox } from '@fastify/type-provider-typebox';

import { clusterHistory, fleetOf } from '../admin/fleet.js';
import { leaseList } from '../admin/lease-lists.js';
import { platformDays } from '../admin/platform-days.js';
import { IdParams, PageQuery } from '../http/schema.js';
import { DEFAULT_MARKET_OPTIONS } from '../market/market.js';
import type { RouteContext } from '../services.js';
import {
  ClusterHistorySchema,
  FleetSchema,
  LeaseListQuery,
  LeaseListSchema,
  PlatformDaysQuery,
  PlatformDaysSchema,
} from '../views/console.js';

export const adminConsoleRoutes: FastifyPluginCallbackTypebox<{ ctx: RouteContext }> = (
  app,
  { ctx },
  done,
) => {
  app.get(
    '/v1/admin/fleet',
    {
      config: { access: 'admin' },
      schema: {
        summary: 'The fleet: every provider, cluster and node, offline and stale first',
        tags: ['admin'],
        response: { 200: FleetSchema },
      },
    },
    async () => {
      const now = ctx.market.clock.now();
      return { at: new Date(now).toISOString(), providers: await fleetOf(ctx.db, now) };
    },
  );

  app.get(
    '/v1/admin/clusters/:id/history',
    {
      config: { access: 'admin', errors: ['not_found'] },
      schema: {
        summary: 'The status changes of a cluster and its nodes, newest first',
        tags: ['admin'],
        params: IdParams,
        querystring: PageQuery,
        response: { 200: ClusterHistorySchema },
      },
    },
    async (request) => {
      const { id } = request.params;
      const [cluster] = await ctx.db.query('SELECT 1 FROM clusters WHERE id = $1', [id]);
      if (cluster === undefined) throw new GpuxError('not_found', `no cluster ${id}`);
      const { limit, offset } = request.query;
      const { total, changes } = await clusterHistory(ctx.db, id, limit, offset);
      return { cluster_id: id, changes, total, limit, offset };
    },
  );

  app.get(
    '/v1/admin/leases',
    {
      config: { access: 'admin' },
      schema: {
        summary: 'Leases by state: provisioning, active, recently ended or failed',
        tags: ['admin'],
        querystring: LeaseListQuery,
        response: { 200: LeaseListSchema },
      },
    },
    async (request) => {
      const { state, limit, offset } = request.query;
      const timeoutMs = ctx.provisioningTimeoutMs ?? DEFAULT_MARKET_OPTIONS.provisioningTimeoutMs;
      const { total, leases } = await leaseList(
        ctx.db,
        state,
        ctx.market.clock.now(),
        timeoutMs,
        limit,
        offset,
      );
      return {
        state,
        provisioning_timeout_seconds: Math.round(timeoutMs / 1000),
        leases,
        total,
        limit,
        offset,
      };
    },
  );

  app.get(
    '/v1/admin/platform/days',
    {
      config: { access: 'admin' },
      schema: {
        summary:
          'The platform’s fees, refunds and payouts per day, and the ledger’s sum-to-zero check',
        tags: ['admin'],
        querystring: PlatformDaysQuery,
        response: { 200: PlatformDaysSchema },
      },
    },
    async (request) => platformDays(ctx.db, request.query.days),
  );

  done();
};
