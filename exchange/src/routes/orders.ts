// POST / GET /v1/orders, GET / DELETE /v1/orders/{id} (service spec
// Endpoints; D5-D18, D21). The schema checks the shape; the rules live in
// orders/ and the book; this file turns outcomes into views.
//
// DELETE /v1/orders/{id} takes a `trade` token, or a `provider` one (issue
// 23: a provider withdraws its own sells with the scopes the README gives
// it); a `provider` token without `trade` cancels only the sells of the
// account's clusters: a buy, or a resale of a lease, is 403 forbidden.

import { GpuxError, ORDER_STATUSES, SIDES } from '@gpux/shared';
import type { FastifyPluginCallbackTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';

import { callerOf } from '../auth/authenticate.js';
import { Defaulted, IdParams, PAGE_QUERY, StringEnum } from '../http/schema.js';
import { fillsOf, listOrders, orderOf } from '../market/queries.js';
import { claimCompletion } from '../auth/idempotency.js';
import type { PlaceOutcome } from '../market/book-state.js';
import { refusalError } from '../market/refusal.js';
import type { Refusal } from '../market/refusal.js';
import { OrderRequestSchema } from '../orders/order-request.js';
import { cancelOrder, placeOrder } from '../orders/order-commands.js';
import type { Cancellation } from '../orders/order-commands.js';
import type { RouteContext } from '../services.js';
import {
  CancellationSchema,
  OrderListSchema,
  OrderSchema,
  cancellationView,
  orderView,
} from '../views/orders.js';

const ListOrdersQuery = Type.Object(
  {
    // D21: omitted means all.
    status: Defaulted(StringEnum([...ORDER_STATUSES, 'all'], { default: 'all' })),
    side: Type.Optional(StringEnum(SIDES)),
    ...PAGE_QUERY,
  },
  { additionalProperties: false },
);

export const orderRoutes: FastifyPluginCallbackTypebox<{ ctx: RouteContext }> = (
  app,
  { ctx },
  done,
) => {
  app.post(
    '/v1/orders',
    {
      config: {
        access: 'customer',
        scope: 'trade',
        rate: 'create',
        errors: [
          'price_out_of_collar',
          'order_value_too_low',
          'insufficient_funds',
          'insufficient_liquidity',
          'insufficient_capacity',
          'cluster_cordoned',
          'self_trade_prevented',
          'market_halted',
        ],
      },
      schema: {
        summary: 'Place an order',
        tags: ['orders'],
        body: OrderRequestSchema,
        response: { 200: OrderSchema },
      },
    },
    async (request) => {
      const outcome = await placeOrder(
        ctx,
        callerOf(request),
        request.body,
        // D23: the answer is committed with the order itself.
        claimCompletion(request, (o: PlaceOutcome) =>
          o.ok ? { status: 200, body: orderView(o.order, o.fills) } : undefined,
        ),
      );
      if (!outcome.ok) throw refusalError(outcome);
      return orderView(outcome.order, outcome.fills);
    },
  );

  app.get(
    '/v1/orders',
    {
      config: { access: 'customer', scope: 'read', rate: 'query' },
      schema: {
        summary: 'List the caller’s orders',
        tags: ['orders'],
        querystring: ListOrdersQuery,
        response: { 200: OrderListSchema },
      },
    },
    async (request) => {
      const { status, side, limit, offset } = request.query;
      const { db } = ctx;
      const { rows, total } = await listOrders(db, callerOf(request).accountId, {
        status,
        side,
        limit,
        offset,
      });
      const fills = await fillsOf(
        db,
        rows.map((r) => r.id),
      );
      return {
        orders: rows.map((r) => orderView(r, fills.get(r.id) ?? [])),
        total,
        limit,
        offset,
      };
    },
  );

  app.get(
    '/v1/orders/:id',
    {
      config: { access: 'customer', scope: 'read', rate: 'query', errors: ['not_found'] },
      schema: {
        summary: 'Read one order',
        tags: ['orders'],
        params: IdParams,
        response: { 200: OrderSchema },
      },
    },
    async (request) => {
      const { db } = ctx;
      const row = await orderOf(db, callerOf(request).accountId, request.params.id);
      if (row === undefined) throw new GpuxError('not_found', `no order ${request.params.id}`);
      const fills = await fillsOf(db, [row.id]);
      return orderView(row, fills.get(row.id) ?? []);
    },
  );

  app.delete(
    '/v1/orders/:id',
    {
      config: {
        access: 'customer',
        scope: ['trade', 'provider'],
        rate: 'cancel',
        errors: ['not_found', 'order_already_filled'],
      },
      schema: {
        summary: 'Cancel an order',
        description:
          'A token with the `provider` scope and not `trade` cancels only the sells of the account’s clusters (a buy or a resale: 403 forbidden).',
        tags: ['orders'],
        params: IdParams,
        response: { 200: CancellationSchema },
      },
    },
    async (request) => {
      const caller = callerOf(request);
      if (!caller.scopes.has('trade')) {
        // A provider token: an order of the account that is not a provider's
        // sell is refused; one of another account stays not_found (D24).
        const row = await orderOf(ctx.db, caller.accountId, request.params.id);
        if (row !== undefined && (row.side !== 'sell' || row.resale_lease_id !== null)) {
          throw new GpuxError(
            'forbidden',
            'this token lacks the "trade" scope; a "provider" token cancels only the sells of the account’s clusters',
          );
        }
      }
      const c = await cancelOrder(
        ctx,
        caller.accountId,
        request.params.id,
        claimCompletion(request, (x: Cancellation | Refusal) =>
          x.ok ? { status: 200, body: cancellationView(x) } : undefined,
        ),
      );
      if (!c.ok) throw refusalError(c);
      return cancellationView(c);
    },
  );

  done();
};
