// GET /v1/leases, GET / DELETE /v1/leases/{id}, POST /v1/leases/{id}/resell,
// GET /v1/leases/{id}/kubeconfig (service spec Endpoints; D25-D28). The rules
// live in leases/ and the book; this file turns outcomes into views.

import {
  FieldProblems,
  GpuxError,
  InvariantError,
  LEASE_STATUSES,
  parsePositiveDollars,
  parseTime,
} from '@gpux/shared';
import type { FastifyPluginCallbackTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';

import { callerOf } from '../auth/authenticate.js';
import { Defaulted, IdParams, PAGE_QUERY, Price, StringEnum, Timestamp } from '../http/schema.js';
import { resellLease, terminateLease } from '../leases/lease-commands.js';
import { claimCompletion } from '../auth/idempotency.js';
import type { ResellOutcome, TerminateOutcome } from '../market/book-state.js';
import { leaseAccessOf, leaseNodesOf, leaseOf, listLeases } from '../market/queries.js';
import { refusalError } from '../market/refusal.js';
import type { RouteContext } from '../services.js';
import {
  LeaseDetailSchema,
  LeaseListSchema,
  ResellSchema,
  TerminationSchema,
  leaseDetailView,
  leaseView,
  resellView,
  terminationView,
} from '../views/leases.js';

const ListLeasesQuery = Type.Object(
  {
    // D21 / D25: omitted means all.
    status: Defaulted(StringEnum([...LEASE_STATUSES, 'all'], { default: 'all' })),
    order_id: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 64,
        description: 'Only the leases made by this buy order’s fills (issue 24).',
      }),
    ),
    ...PAGE_QUERY,
  },
  { additionalProperties: false },
);

const ResellBody = Type.Object(
  {
    // Dollars per GPU-hour, parsed exactly to cents below (D1).
    limit_price: Price('The lowest price the rest of the lease sells at.'),
    // D27: the window [available_from, lease end], the order expiring at available_until.
    available_from: Type.Optional(
      Timestamp('When the buyer may take over the nodes (default: now).'),
    ),
    available_until: Type.Optional(Timestamp('When the offer expires (default: the lease’s end).')),
    transfer_immediately: Type.Optional(
      Type.Boolean({
        description: 'End the seller’s access at the match, not at the transfer time.',
      }),
    ),
  },
  { title: 'ResellRequest', additionalProperties: false },
);

export const leaseRoutes: FastifyPluginCallbackTypebox<{ ctx: RouteContext }> = (
  app,
  { ctx },
  done,
) => {
  app.get(
    '/v1/leases',
    {
      config: { access: 'customer', scope: 'read', rate: 'query' },
      schema: {
        summary: 'List the caller’s leases',
        tags: ['leases'],
        querystring: ListLeasesQuery,
        response: { 200: LeaseListSchema },
      },
    },
    async (request) => {
      const { status, order_id: orderId, limit, offset } = request.query;
      const { rows, total } = await listLeases(ctx.db, callerOf(request).accountId, {
        status,
        orderId,
        limit,
        offset,
      });
      const now = ctx.market.clock.now();
      return { leases: rows.map((l) => leaseView(l, now)), total, limit, offset };
    },
  );

  app.get(
    '/v1/leases/:id',
    {
      config: { access: 'customer', scope: 'read', rate: 'query', errors: ['not_found'] },
      schema: {
        summary: 'Read one lease with its access details',
        tags: ['leases'],
        params: IdParams,
        response: { 200: LeaseDetailSchema },
      },
    },
    async (request) => {
      const { db } = ctx;
      const lease = await leaseOf(db, callerOf(request).accountId, request.params.id);
      if (lease === undefined) throw new GpuxError('not_found', `no lease ${request.params.id}`);
      const [nodes, access] = await Promise.all([
        leaseNodesOf(db, lease.id),
        leaseAccessOf(db, lease.id),
      ]);
      return leaseDetailView(ctx.market.clock.now(), lease, nodes, access);
    },
  );

  app.delete(
    '/v1/leases/:id',
    {
      config: {
        access: 'customer',
        scope: 'leases',
        rate: 'query',
        errors: ['not_found', 'lease_not_active'],
      },
      schema: {
        summary: 'Terminate a lease now, refunding the unused time',
        tags: ['leases'],
        params: IdParams,
        response: { 200: TerminationSchema },
      },
    },
    async (request) => {
      const outcome = await terminateLease(
        ctx,
        callerOf(request).accountId,
        request.params.id,
        // D23: the answer is committed with the termination itself.
        claimCompletion(request, (o: TerminateOutcome) =>
          o.ok ? { status: 200, body: terminationView(o) } : undefined,
        ),
      );
      if (!outcome.ok) throw refusalError(outcome);
      return terminationView(outcome);
    },
  );

  app.post(
    '/v1/leases/:id/resell',
    {
      config: {
        access: 'customer',
        scope: 'leases',
        rate: 'create',
        errors: [
          'not_found',
          'lease_not_active',
          'lease_not_ready',
          'price_out_of_collar',
          'order_value_too_low',
          'self_trade_prevented',
          'market_halted',
          'cluster_cordoned',
        ],
      },
      schema: {
        summary: 'Offer the rest of a lease for resale',
        tags: ['leases'],
        params: IdParams,
        body: ResellBody,
        response: { 200: ResellSchema },
      },
    },
    async (request) => {
      const b = request.body;
      // Every problem of the fields at once; the schema has checked their form.
      const problems = new FieldProblems();
      const price = problems.take(() => parsePositiveDollars(b.limit_price, 'limit_price'));
      const availableFrom =
        b.available_from === undefined
          ? undefined
          : problems.take(() => parseTime(b.available_from ?? '', 'available_from'));
      const availableUntil =
        b.available_until === undefined
          ? undefined
          : problems.take(() => parseTime(b.available_until ?? '', 'available_until'));
      problems.throwIfAny();
      if (price === undefined) throw new InvariantError('limit_price failed to parse silently');
      const outcome = await resellLease(
        ctx,
        callerOf(request),
        request.params.id,
        {
          priceCents: price,
          availableFrom,
          availableUntil,
          transferImmediately: b.transfer_immediately ?? false,
        },
        claimCompletion(request, (o: ResellOutcome) =>
          o.ok ? { status: 200, body: resellView(o, price) } : undefined,
        ),
      );
      if (!outcome.ok) throw refusalError(outcome);
      return resellView(outcome, price);
    },
  );

  app.get(
    '/v1/leases/:id/kubeconfig',
    {
      config: {
        access: 'customer',
        scope: 'leases',
        rate: 'query',
        errors: ['not_found', 'lease_not_ready'],
      },
      schema: {
        summary: 'The lease’s kubeconfig (YAML)',
        tags: ['leases'],
        params: IdParams,
        // D28: a kubeconfig file, not JSON.
        response: {
          200: {
            description:
              'The kubeconfig of the lease: a namespaced token valid until the lease ends at the latest.',
            content: { 'application/yaml': { schema: Type.String() } },
          },
        },
      },
    },
    async (request, reply) => {
      const lease = await leaseOf(ctx.db, callerOf(request).accountId, request.params.id);
      // D28: after the lease ends the endpoint is 404.
      if (lease === undefined || (lease.status !== 'active' && lease.status !== 'provisioning')) {
        throw new GpuxError('not_found', `no live lease ${request.params.id}`);
      }
      // The agent reports the namespaced kubeconfig once it has provisioned
      // the lease; until then there is nothing to serve (D28). The latest
      // report is served (a refreshed token replaces the one before).
      const access = await leaseAccessOf(ctx.db, lease.id);
      if (access?.kubeconfig_sealed == null) {
        throw new GpuxError(
          'lease_not_ready',
          `lease ${lease.id} is ${lease.status}; its kubeconfig exists once the provider's agent has provisioned it`,
        );
      }
      const yaml = ctx.secrets.open(access.kubeconfig_sealed, lease.id);
      return reply.type('application/yaml; charset=utf-8').send(yaml);
    },
  );

  done();
};
