// GET /v1/leases, GET / DELETE /v1/leases/{id}, POST /v1/leases/{id}/resell,
// GET /v1/leases/{id}/kubeconfig (service spec Endpoints; D25-D28). The rules
// live in leases/ and the book; this file turns outcomes into views.

import { GpuxError, LEASE_STATUSES, parsePositiveDollars, parseTime } from '@gpux/shared';
import type { FastifyPluginCallbackTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';

import { callerOf } from '../auth/authenticate.js';
import { Defaulted, IdParams, PAGE_QUERY, StringEnum } from '../http/schema.js';
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
    ...PAGE_QUERY,
  },
  { additionalProperties: false },
);

const ResellBody = Type.Object(
  {
    // Dollars per GPU-hour, parsed exactly to cents below (D1).
    limit_price: Type.Number(),
    available_from: Type.Optional(Type.String({ minLength: 1, maxLength: 40 })),
    available_until: Type.Optional(Type.String({ minLength: 1, maxLength: 40 })),
    transfer_immediately: Type.Optional(Type.Boolean()),
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
      const { status, limit, offset } = request.query;
      const { rows, total } = await listLeases(ctx.db, callerOf(request).accountId, {
        status,
        limit,
        offset,
      });
      return { leases: rows.map(leaseView), total, limit, offset };
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
      return leaseDetailView(lease, nodes, access);
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
      const price = parsePositiveDollars(b.limit_price, 'limit_price');
      const outcome = await resellLease(
        ctx,
        callerOf(request),
        request.params.id,
        {
          priceCents: price,
          availableFrom:
            b.available_from === undefined
              ? undefined
              : parseTime(b.available_from, 'available_from'),
          availableUntil:
            b.available_until === undefined
              ? undefined
              : parseTime(b.available_until, 'available_until'),
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
            description: 'The kubeconfig of the lease (D28).',
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
