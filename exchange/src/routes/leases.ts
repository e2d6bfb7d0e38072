// GET /v1/leases, GET / DELETE /v1/leases/{id}, POST /v1/leases/{id}/resell,
// GET /v1/leases/{id}/kubeconfig (service spec Endpoints; D25-D28).

import {
  GpuxError,
  HOUR_MS,
  LEASE_STATUSES,
  formatDollars,
  mulDivHalfEven,
  newId,
  parsePositiveDollars,
  splitFee,
} from '@gpux/shared';
import type { LeaseStatus } from '@gpux/shared';
import type { FastifyInstance } from 'fastify';

import { callerOf, requireScope } from '../auth/authenticate.js';
import type { ResellOutcome } from '../market/book-state.js';
import { leaseNodesOf, leaseOf, listLeases } from '../market/queries.js';
import type { LeaseRow, OrderRow } from '../market/rows.js';
import { hoursOf, leaseDetailView, leaseView, rateCentsOf } from '../market/views.js';
import type { RouteContext } from '../services.js';
import { ID_PARAM } from './orders.js';
import { PAGE_QUERY } from './paging.js';
import { parseTime } from './time.js';

const listLeasesQuery = {
  type: 'object',
  additionalProperties: false,
  properties: {
    // D21 / D25: omitted means all.
    status: { type: 'string', enum: [...LEASE_STATUSES, 'all'], default: 'all' },
    ...PAGE_QUERY,
  },
} as const;

const resellBody = {
  type: 'object',
  additionalProperties: false,
  required: ['limit_price'],
  properties: {
    limit_price: { type: 'number' },
    available_from: { type: 'string', minLength: 1, maxLength: 40 },
    available_until: { type: 'string', minLength: 1, maxLength: 40 },
    transfer_immediately: { type: 'boolean' },
  },
} as const;

interface ResellBody {
  limit_price: number;
  available_from?: string;
  available_until?: string;
  transfer_immediately?: boolean;
}

function iso(ms: number): string {
  return new Date(ms).toISOString();
}

export function leaseRoutes(
  app: FastifyInstance,
  { db, limiter, market, directory }: RouteContext,
): void {
  app.get<{ Querystring: { status: LeaseStatus | 'all'; limit: number; offset: number } }>(
    '/v1/leases',
    {
      schema: { querystring: listLeasesQuery },
      preValidation: requireScope(directory, limiter, 'read'),
    },
    async (request) => {
      const { status, limit, offset } = request.query;
      const { rows, total } = await listLeases(db, callerOf(request).accountId, {
        status,
        limit,
        offset,
      });
      return { leases: rows.map(leaseView), total, limit, offset };
    },
  );

  app.get<{ Params: { id: string } }>(
    '/v1/leases/:id',
    { schema: { params: ID_PARAM }, preValidation: requireScope(directory, limiter, 'read') },
    async (request) => {
      const lease = await leaseOf(db, callerOf(request).accountId, request.params.id);
      if (lease === undefined) throw new GpuxError('not_found', `no lease ${request.params.id}`);
      const nodes = await leaseNodesOf(db, lease.id);
      // SSH endpoints and host keys are reported by the provider's agent (D32).
      return leaseDetailView(lease, nodes, { sshEndpoints: [], sshHostKeys: [] });
    },
  );

  app.delete<{ Params: { id: string } }>(
    '/v1/leases/:id',
    { schema: { params: ID_PARAM }, preValidation: requireScope(directory, limiter, 'leases') },
    async (request) => {
      const accountId = callerOf(request).accountId;
      const lease = await liveLeaseOf(db, accountId, request.params.id);
      const outcome = await market
        .writer(lease.gpu_type, lease.zone)
        .submit((state, changes) =>
          state.terminate(lease.id, accountId, market.clock.now(), changes),
        );
      if (!outcome.live) throw notActive(lease.id);
      const l = outcome.lease;
      return {
        lease_id: l.id,
        status: 'terminated',
        terminated_at: iso(outcome.terminatedAt),
        original_end_time: iso(l.end_ms),
        hours_used: hoursOf(outcome.usedMs),
        hours_remaining: hoursOf(outcome.remainingMs),
        rate: formatDollars(rateCentsOf(l)),
        // D26: hours_remaining × rate × gpu_count, exact, rounded once (D1).
        refund_amount: formatDollars(outcome.refundCents),
        refunded_at: iso(outcome.terminatedAt),
      };
    },
  );

  app.post<{ Params: { id: string }; Body: ResellBody }>(
    '/v1/leases/:id/resell',
    {
      schema: { params: ID_PARAM, body: resellBody },
      preValidation: requireScope(directory, limiter, 'leases', 'create'),
    },
    async (request) => {
      const caller = callerOf(request);
      const b = request.body;
      const price = parsePositiveDollars(b.limit_price, 'limit_price');
      const from =
        b.available_from === undefined ? undefined : parseTime(b.available_from, 'available_from');
      const until =
        b.available_until === undefined
          ? undefined
          : parseTime(b.available_until, 'available_until');
      const lease = await liveLeaseOf(db, caller.accountId, request.params.id);
      let window: { from: number; until: number } = { from: 0, until: 0 };
      const outcome: ResellOutcome = await market
        .writer(lease.gpu_type, lease.zone)
        .submit((state, changes) => {
          const now = market.clock.now();
          return state.resell(lease.id, caller.accountId, now, changes, (l) => {
            window = resaleWindow(l, now, from, until);
            return resaleOrderRow(l, caller, price, now, window, b.transfer_immediately ?? false);
          });
        });
      if (!outcome.live) throw notActive(lease.id);
      if (!outcome.ok) {
        throw new GpuxError(
          outcome.code,
          outcome.message,
          outcome.missingGpus === undefined
            ? {}
            : { details: { missing_gpus: outcome.missingGpus } },
        );
      }
      const o = outcome.order;
      const remainingMs = Math.max(0, lease.end_ms - Math.max(o.created_ms, window.from));
      const [fill] = outcome.fills;
      if (fill === undefined) {
        // D27 pending form: what the whole remaining time would fetch at this price.
        const potential = mulDivHalfEven([remainingMs, price, lease.gpu_count], HOUR_MS);
        const { fee, payout } = splitFee(potential);
        return {
          order_id: o.id,
          lease_id: lease.id,
          limit_price: formatDollars(price),
          status: 'pending',
          available_from: iso(window.from),
          available_until: iso(window.until),
          remaining_hours: hoursOf(remainingMs),
          potential_recovery: formatDollars(potential),
          platform_fee: formatDollars(fee),
          net_recovery: formatDollars(payout),
          transfer_immediately: o.transfer_immediately,
          created_at: iso(o.created_ms),
        };
      }
      // D27 matched form: the transfer is the match (the order entered the book at available_from).
      const sale = fill.price_cents * fill.gpus * fill.hours;
      const { fee, payout } = splitFee(sale);
      const originalRefund = outcome.sourceLease.refund_cents ?? 0;
      return {
        order_id: o.id,
        lease_id: lease.id,
        limit_price: formatDollars(price),
        status: 'filled',
        matched_at: iso(fill.at_ms),
        buyer_order_id: fill.buy_order_id,
        remaining_hours: hoursOf(remainingMs),
        sale_amount: formatDollars(sale),
        platform_fee: formatDollars(fee),
        net_recovery: formatDollars(payout),
        original_refund: formatDollars(originalRefund),
        total_recovery: formatDollars(payout + originalRefund),
        transfer_time: iso(fill.at_ms),
        transfer_immediately: o.transfer_immediately,
      };
    },
  );

  app.get<{ Params: { id: string } }>(
    '/v1/leases/:id/kubeconfig',
    { schema: { params: ID_PARAM }, preValidation: requireScope(directory, limiter, 'leases') },
    async (request) => {
      const lease = await leaseOf(db, callerOf(request).accountId, request.params.id);
      // D28: after the lease ends the endpoint is 404.
      if (lease === undefined || (lease.status !== 'active' && lease.status !== 'provisioning')) {
        throw new GpuxError('not_found', `no live lease ${request.params.id}`);
      }
      // The agent reports the namespaced kubeconfig once it has provisioned
      // the lease; until then there is nothing to serve (D28).
      throw new GpuxError(
        'lease_not_ready',
        `lease ${lease.id} is ${lease.status}; its kubeconfig exists once the provider's agent has provisioned it`,
      );
    },
  );
}

/** A lease of the caller that is still live, else 404 or lease_not_active (D26). */
async function liveLeaseOf(
  db: RouteContext['db'],
  accountId: string,
  leaseId: string,
): Promise<LeaseRow> {
  const lease = await leaseOf(db, accountId, leaseId);
  if (lease === undefined) throw new GpuxError('not_found', `no lease ${leaseId}`);
  if (lease.status !== 'active' && lease.status !== 'provisioning') throw notActive(leaseId);
  return lease;
}

function notActive(leaseId: string): GpuxError {
  return new GpuxError('lease_not_active', `lease ${leaseId} is no longer active`);
}

/**
 * D27: the window offered is [available_from, lease end]; the order expires
 * at available_until (default: the lease end).
 */
function resaleWindow(
  l: LeaseRow,
  now: number,
  from: number | undefined,
  until: number | undefined,
): { from: number; until: number } {
  const f = Math.max(now, from ?? now);
  const u = until ?? l.end_ms;
  if (u <= f)
    throw new GpuxError('invalid_request', 'available_until must be after available_from');
  if (u > l.end_ms)
    throw new GpuxError('invalid_request', 'available_until is after the lease ends');
  if (l.end_ms - f < HOUR_MS) {
    throw new GpuxError('invalid_request', 'less than one hour of the lease is left to resell');
  }
  return { from: f, until: u };
}

/**
 * The resell order: a sell for the whole lease whose window ends at the
 * lease's end. The book counts windows in whole hours from a start, so the
 * start is the lease end minus a whole number of hours: at or before now when
 * the lease is offered at once, else at or after available_from (the order
 * then enters the book up to an hour after available_from; docs/api/leases.md).
 */
function resaleOrderRow(
  l: LeaseRow,
  caller: { accountId: string; organizationId: string },
  priceCents: number,
  now: number,
  w: { from: number; until: number },
  transferImmediately: boolean,
): OrderRow {
  const hours =
    w.from <= now
      ? Math.ceil((l.end_ms - now) / HOUR_MS)
      : Math.floor((l.end_ms - w.from) / HOUR_MS);
  return {
    id: newId('ord_'),
    account_id: caller.accountId,
    organization_id: caller.organizationId,
    side: 'sell',
    order_type: 'limit',
    gpu_type: l.gpu_type,
    zone: l.zone,
    gpu_count: l.gpu_count,
    duration_hours: hours,
    limit_price_cents: priceCents,
    allow_partial: false,
    start_ms: l.end_ms - hours * HOUR_MS,
    flexible_window_hours: null,
    expires_input_ms: w.until < l.end_ms ? w.until : null,
    cluster_id: l.cluster_id,
    resale_lease_id: l.id,
    transfer_immediately: transferImmediately,
    status: 'pending',
    filled_gpus: 0,
    cancelled_gpus: 0,
    cancel_reason: null,
    reference_price_cents: null,
    created_ms: now,
    filled_ms: null,
    cancelled_ms: null,
    book_state: null,
    remaining_nodes: null,
    seq: null,
    accept_seq: null,
    accepted_ms: null,
    arrive_ms: null,
    expires_ms: null,
    rest_price_cents: null,
  };
}
