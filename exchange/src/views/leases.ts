// The JSON the API shows for leases, their termination and their resale
// (service spec "Resources", D25-D27), built from rows and outcomes, and the
// schemas the routes answer with. Money goes out as dollars rounded to cents
// (D1). A field added to a view must be added to its schema, or the
// serializer drops it (the views' types come from the schemas and refuse it).

import { GPU_TYPES, LEASE_STATUSES, ZONES, formatDollars, leaseNamespace } from '@gpux/shared';
import type { Cents } from '@gpux/shared';
import { Type } from '@sinclair/typebox';
import type { Static } from '@sinclair/typebox';

import { Dollars, GpuCount, PAGE_FIELDS, StringEnum, Timestamp } from '../http/schema.js';
import { potentialRecovery, rateCentsOf, saleRecovery } from '../leases/lease-money.js';
import type { ResellOutcome, TerminateOutcome } from '../market/book-state.js';
import type { LeaseAccessRow } from '../market/queries.js';
import type { LeaseNodeRow, LeaseRow } from '../market/rows.js';
import { hoursOf, iso } from './format.js';
import { sshAccessOf } from './ssh-access.js';

const END_REASONS = ['terminated', 'resold', 'expired', 'failed'] as const;

/** Issue 24: a lease's state as a program needs it (docs/api/leases.md, "States"). */
export const LEASE_STATES = [
  'scheduled',
  'provisioning',
  'active',
  'sold',
  'terminated',
  'expired',
  'failed',
] as const;
export type LeaseState = (typeof LEASE_STATES)[number];

/** The state of a lease at `now` from its row. */
export function leaseStateOf(l: LeaseRow, now: number): LeaseState {
  if (l.status === 'provisioning') return l.start_ms > now ? 'scheduled' : 'provisioning';
  if (l.status === 'active') return l.transfer_ms !== null ? 'sold' : 'active';
  if (l.end_reason === 'resold') return 'sold';
  return l.status;
}

const LEASE_FIELDS = {
  lease_id: Type.String(),
  customer_id: Type.String({ description: 'The owning account.' }),
  order_id: Type.String({ description: 'The buy order whose fill made the lease.' }),
  gpu_type: StringEnum(GPU_TYPES),
  gpu_count: GpuCount(),
  instance_type: Type.String({ description: '`<gpu_count>x<gpu_type>`.' }),
  zone: StringEnum(ZONES),
  status: StringEnum(LEASE_STATUSES, {
    description:
      'provisioning (matched, the provider at work), active, terminated, expired, or failed (not provisioned in time: refunded in full).',
  }),
  rate: Dollars('The matched price, dollars per GPU-hour.'),
  start_time: Timestamp(),
  end_time: Timestamp(),
  created_at: Timestamp(),
  ended_at: Type.Optional(Timestamp()),
  end_reason: Type.Optional(StringEnum(END_REASONS)),
  refund_amount: Type.Optional(Dollars('Refunded for unused time.')),
  state: StringEnum(LEASE_STATES, {
    description:
      'Where the lease is, more precisely than `status` (docs/api/leases.md, "States"): scheduled (paid, starts at start_time: a future start or a resale’s later transfer), provisioning, active, sold (resold: it ends at transfer_time), terminated, expired, failed.',
  }),
  transfer_time: Type.Optional(
    Timestamp(
      'Set once the lease is resold: when the buyer takes the nodes over and this lease ends.',
    ),
  ),
  hourly_cost: Dollars('What the whole lease costs per hour: Σ price × GPUs of its fills.'),
};

const SshAccessSchema = Type.Object(
  {
    hostname: Type.String({ description: 'The leased node this endpoint reaches.' }),
    endpoint: Type.String({ description: '`<user>@<host>:<port>`, as in ssh_endpoints.' }),
    user: Type.String(),
    host: Type.String(),
    port: Type.Integer({ minimum: 1, maximum: 65535 }),
    host_keys: Type.Array(Type.String(), {
      description:
        'OpenSSH public key lines (`<type> <base64>`) of the provider’s SSH gateway that serves this endpoint.',
    }),
    known_hosts: Type.Array(Type.String(), {
      description:
        'One `known_hosts` line per host key: `[host]:port <type> <base64>` (plain `host` on port 22), for `UserKnownHostsFile` with `StrictHostKeyChecking=yes`.',
    }),
  },
  { title: 'SshAccess' },
);

/** A lease as lists show it (spec: without namespace, nodes and SSH endpoints). */
export const LeaseSchema = Type.Object(LEASE_FIELDS, { title: 'Lease', description: 'A lease.' });
export type LeaseJson = Static<typeof LeaseSchema>;

export const LeaseListSchema = Type.Object(
  {
    leases: Type.Array(LeaseSchema, { description: 'Newest first.' }),
    ...PAGE_FIELDS,
  },
  { title: 'LeaseList' },
);

export const LeaseDetailSchema = Type.Object(
  {
    ...LEASE_FIELDS,
    cluster_id: Type.String(),
    namespace: Type.String({ description: 'The cluster namespace of the lease.' }),
    nodes: Type.Array(Type.String(), { description: 'Node host names.' }),
    node_status: Type.Array(
      Type.Object({
        hostname: Type.String(),
        status: StringEnum(['available', 'online', 'offline'] as const),
      }),
      {
        description:
          "Each node's status by its agent's heartbeats; a lease stays active while its nodes are offline.",
      },
    ),
    ssh_endpoints: Type.Array(Type.String(), {
      description:
        "`<user>@<node_host>:<port>`, one per node, once the provider's agent has provisioned the lease; empty once it ended.",
    }),
    ssh_host_keys: Type.Array(Type.String(), {
      description: "The endpoints' host keys (OpenSSH public key lines), to pin them.",
    }),
    ssh_access: Type.Array(SshAccessSchema, {
      description:
        'One entry per SSH endpoint, each with the host keys that may answer on it and ready `known_hosts` lines; empty until the agent reports and once the lease ended.',
    }),
  },
  { title: 'LeaseDetail', description: 'A lease with where and how to reach it.' },
);
export type LeaseDetailJson = Static<typeof LeaseDetailSchema>;

export const TerminationSchema = Type.Object(
  {
    lease_id: Type.String(),
    status: Type.Literal('terminated'),
    terminated_at: Timestamp(),
    original_end_time: Timestamp(),
    hours_used: Type.Number({ description: 'milliseconds_used in hours, rounded to the second.' }),
    hours_remaining: Type.Number({
      description: 'milliseconds_remaining in hours, rounded to the second.',
    }),
    milliseconds_used: Type.Integer({ minimum: 0 }),
    milliseconds_remaining: Type.Integer({
      minimum: 0,
      description: 'From the termination (or the lease’s start, if later) to original_end_time.',
    }),
    rate: Dollars(),
    hourly_cost: Dollars('The whole lease per hour: Σ price × GPUs of its fills.'),
    refund_amount: Dollars(
      'milliseconds_remaining × hourly_cost / 3,600,000, rounded half-even to the cent once (docs/api/leases.md).',
    ),
    refunded_at: Timestamp(),
  },
  { title: 'Termination', description: 'The lease ended now; the unused time is refunded.' },
);
export type TerminationJson = Static<typeof TerminationSchema>;

const ResellPendingSchema = Type.Object(
  {
    order_id: Type.String(),
    lease_id: Type.String(),
    limit_price: Dollars(),
    status: Type.Literal('pending'),
    available_from: Timestamp(),
    available_until: Timestamp(),
    remaining_hours: Type.Number(),
    potential_recovery: Dollars('remaining_hours × limit_price × gpu_count, before the fee.'),
    platform_fee: Dollars(),
    net_recovery: Dollars('After the 10% fee.'),
    transfer_immediately: Type.Boolean(),
    created_at: Timestamp(),
  },
  { title: 'ResellPending', description: 'The resell order waits in the book.' },
);

const ResellFilledSchema = Type.Object(
  {
    order_id: Type.String(),
    lease_id: Type.String(),
    limit_price: Dollars(),
    status: Type.Literal('filled'),
    matched_at: Timestamp(),
    buyer_order_id: Type.String(),
    remaining_hours: Type.Number(),
    sale_amount: Dollars(),
    platform_fee: Dollars(),
    net_recovery: Dollars(),
    original_refund: Dollars('The original rate for the hours nobody uses.'),
    total_recovery: Dollars('net_recovery + original_refund.'),
    transfer_time: Timestamp(),
    transfer_immediately: Type.Boolean(),
  },
  { title: 'ResellFilled', description: 'A buyer took the lease at once.' },
);

export const ResellSchema = Type.Union([ResellPendingSchema, ResellFilledSchema], {
  title: 'Resell',
});
export type ResellJson = Static<typeof ResellSchema>;

export function leaseView(l: LeaseRow, now: number): LeaseJson {
  const v: LeaseJson = {
    lease_id: l.id,
    customer_id: l.account_id,
    order_id: l.buy_order_id,
    gpu_type: l.gpu_type,
    gpu_count: l.gpu_count,
    instance_type: `${l.gpu_count}x${l.gpu_type}`,
    zone: l.zone,
    status: l.status,
    rate: formatDollars(rateCentsOf(l)),
    start_time: iso(l.start_ms),
    end_time: iso(l.end_ms),
    created_at: iso(l.created_ms),
    state: leaseStateOf(l, now),
    hourly_cost: formatDollars(l.hourly_cents),
  };
  if (l.transfer_ms !== null) v.transfer_time = iso(l.transfer_ms);
  if (l.ended_ms !== null) v.ended_at = iso(l.ended_ms);
  if (l.end_reason !== null) v.end_reason = l.end_reason;
  if (l.refund_cents !== null) v.refund_amount = formatDollars(l.refund_cents);
  return v;
}

/** The single-lease read: the list view plus where and how to reach it. */
export function leaseDetailView(
  now: number,
  l: LeaseRow,
  nodes: readonly (LeaseNodeRow & { status: 'available' | 'online' | 'offline' })[],
  access: Pick<LeaseAccessRow, 'ssh_endpoints' | 'ssh_host_keys'> | undefined,
): LeaseDetailJson {
  // Reported by the agent once the lease is provisioned (D32); gone with the lease.
  const live = (l.status === 'active' || l.status === 'provisioning') && access !== undefined;
  const endpoint = new Map(access?.ssh_endpoints.map((e) => [e.hostname, e.endpoint]) ?? []);
  const endpoints = live
    ? nodes.flatMap((n) => {
        const e = endpoint.get(n.hostname);
        return e === undefined ? [] : [{ hostname: n.hostname, endpoint: e }];
      })
    : [];
  const hostKeys = live ? [...access.ssh_host_keys] : [];
  return {
    ...leaseView(l, now),
    cluster_id: l.cluster_id,
    namespace: leaseNamespace(l.id),
    nodes: nodes.map((n) => n.hostname),
    node_status: nodes.map((n) => ({ hostname: n.hostname, status: n.status })),
    ssh_endpoints: endpoints.map((e) => e.endpoint),
    ssh_host_keys: hostKeys,
    ssh_access: endpoints.flatMap((e) => {
      const a = sshAccessOf(e.hostname, e.endpoint, hostKeys);
      return a === undefined ? [] : [a];
    }),
  };
}

/** D26: DELETE /v1/leases/{id}. */
export function terminationView(t: Extract<TerminateOutcome, { ok: true }>): TerminationJson {
  const { lease: l, refund } = t;
  return {
    lease_id: l.id,
    status: 'terminated',
    terminated_at: iso(t.terminatedAt),
    original_end_time: iso(l.end_ms),
    hours_used: hoursOf(refund.usedMs),
    hours_remaining: hoursOf(refund.remainingMs),
    milliseconds_used: refund.usedMs,
    milliseconds_remaining: refund.remainingMs,
    rate: formatDollars(rateCentsOf(l)),
    hourly_cost: formatDollars(l.hourly_cents),
    // D26: hours_remaining × rate × gpu_count, exact, rounded once (D1).
    refund_amount: formatDollars(refund.refundCents),
    refunded_at: iso(t.terminatedAt),
  };
}

/** D27: POST /v1/leases/{id}/resell, pending or matched at once. */
export function resellView(
  outcome: Extract<ResellOutcome, { ok: true }>,
  priceCents: Cents,
): ResellJson {
  const { order: o, sourceLease: lease, window } = outcome;
  const remainingMs = Math.max(0, lease.end_ms - Math.max(o.created_ms, window.from));
  // A resell order's row always says whether the transfer is immediate.
  const transferImmediately = o.transfer_immediately === true;
  const [fill] = outcome.fills;
  if (fill === undefined) {
    // D27 pending form: what the whole remaining time would fetch at this price.
    const r = potentialRecovery(remainingMs, priceCents, lease.gpu_count);
    return {
      order_id: o.id,
      lease_id: lease.id,
      limit_price: formatDollars(priceCents),
      status: 'pending',
      available_from: iso(window.from),
      available_until: iso(window.until),
      remaining_hours: hoursOf(remainingMs),
      potential_recovery: formatDollars(r.grossCents),
      platform_fee: formatDollars(r.feeCents),
      net_recovery: formatDollars(r.netCents),
      transfer_immediately: transferImmediately,
      created_at: iso(o.created_ms),
    };
  }
  // D27 matched form: the buyer's lease starts at transfer_time =
  // max(match, available_from); until then the reseller keeps its access
  // (unless it transfers immediately).
  const sale = saleRecovery(fill.price_cents, fill.gpus, fill.hours);
  const transferAt = outcome.transferAt ?? fill.at_ms;
  const originalRefund = lease.refund_cents ?? 0;
  return {
    order_id: o.id,
    lease_id: lease.id,
    limit_price: formatDollars(priceCents),
    status: 'filled',
    matched_at: iso(fill.at_ms),
    buyer_order_id: fill.buy_order_id,
    remaining_hours: hoursOf(remainingMs),
    sale_amount: formatDollars(sale.grossCents),
    platform_fee: formatDollars(sale.feeCents),
    net_recovery: formatDollars(sale.netCents),
    original_refund: formatDollars(originalRefund),
    total_recovery: formatDollars(sale.netCents + originalRefund),
    transfer_time: iso(transferAt),
    transfer_immediately: transferImmediately,
  };
}
