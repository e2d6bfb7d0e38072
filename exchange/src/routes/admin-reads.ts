// The operators' reads of any account's orders and leases (issue 21,
// docs/api/admin.md): GET /v1/admin/orders/{id} with its fills and
// GET /v1/admin/leases/{id}, the views the owner sees, whoever owns them.

import { GpuxError } from '@gpux/shared';
import type { FastifyPluginCallbackTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';

import { IdParams } from '../http/schema.js';
import { fillsOf, leaseAccessOf, leaseNodesOf } from '../market/queries.js';
import type { LeaseRow, OrderRow } from '../market/rows.js';
import type { RouteContext } from '../services.js';
import { LeaseDetailSchema, leaseDetailView } from '../views/leases.js';
import { OrderSchema, orderView } from '../views/orders.js';

const AdminOrderSchema = Type.Object(
  {
    account_id: Type.String({ description: 'Whose order it is.' }),
    organization_id: Type.String(),
    order: OrderSchema,
  },
  { title: 'AdminOrder', description: 'Any account’s order, with its fills.' },
);

export const adminReadRoutes: FastifyPluginCallbackTypebox<{ ctx: RouteContext }> = (
  app,
  { ctx },
  done,
) => {
  app.get(
    '/v1/admin/orders/:id',
    {
      config: { access: 'admin', errors: ['not_found'] },
      schema: {
        summary: 'Read any account’s order with its fills',
        tags: ['admin'],
        params: IdParams,
        response: { 200: AdminOrderSchema },
      },
    },
    async (request) => {
      const [row] = await ctx.db.query<OrderRow>('SELECT * FROM orders WHERE id = $1', [
        request.params.id,
      ]);
      if (row === undefined) throw new GpuxError('not_found', `no order ${request.params.id}`);
      const fills = await fillsOf(ctx.db, [row.id]);
      return {
        account_id: row.account_id,
        organization_id: row.organization_id,
        order: orderView(row, fills.get(row.id) ?? []),
      };
    },
  );

  app.get(
    '/v1/admin/leases/:id',
    {
      config: { access: 'admin', errors: ['not_found'] },
      schema: {
        summary: 'Read any account’s lease with its nodes and access details',
        tags: ['admin'],
        params: IdParams,
        response: { 200: LeaseDetailSchema },
      },
    },
    async (request) => {
      const [lease] = await ctx.db.query<LeaseRow>('SELECT * FROM leases WHERE id = $1', [
        request.params.id,
      ]);
      if (lease === undefined) throw new GpuxError('not_found', `no lease ${request.params.id}`);
      const [nodes, access] = await Promise.all([
        leaseNodesOf(ctx.db, lease.id),
        leaseAccessOf(ctx.db, lease.id),
      ]);
      return leaseDetailView(ctx.market.clock.now(), lease, nodes, access);
    },
  );

  done();
};
