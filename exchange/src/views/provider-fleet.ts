// What GET /v1/clusters and GET /v1/clusters/{id} answer (issue 23: a
// provider sees its own fleet with its own token): the console's fleet
// cluster (views/console.ts), the provider's earnings and payouts, and the
// leases sold on a cluster without their buyers.

import { LEASE_STATUSES } from '@gpux/shared';
import { Type } from '@sinclair/typebox';

import { Dollars, GpuCount, Nullable, StringEnum, Timestamp } from '../http/schema.js';
import { EarningsSchema, FleetClusterSchema } from './console.js';
import { LEASE_STATES } from './leases.js';

export const PayoutsSchema = Type.Object(
  {
    total: Dollars('Every payout an operator recorded for the account.'),
    count: Type.Integer({ minimum: 0 }),
    last_at: Nullable(Timestamp('The latest payout.')),
  },
  { title: 'ProviderPayouts' },
);

export const OwnFleetSchema = Type.Object(
  {
    at: Timestamp('When the exchange read it.'),
    account_id: Type.String(),
    earnings: EarningsSchema,
    payouts: PayoutsSchema,
    balance: Dollars('The account’s balance: earnings not yet paid out, less refunds.'),
    clusters: Type.Array(FleetClusterSchema, { description: 'Those needing attention first.' }),
  },
  { title: 'OwnFleet' },
);

export const SoldLeaseSchema = Type.Object(
  {
    lease_id: Type.String(),
    gpu_count: GpuCount(),
    nodes: Type.Array(Type.String(), { description: 'Host names of the nodes it holds.' }),
    status: StringEnum(LEASE_STATUSES),
    state: StringEnum(LEASE_STATES),
    rate: Dollars('Dollars per GPU-hour.'),
    hourly_cost: Dollars('What the whole lease pays per hour, before the fee.'),
    start_time: Timestamp(),
    end_time: Timestamp(),
    ended_at: Type.Optional(Timestamp()),
    end_reason: Type.Optional(Type.String()),
  },
  { title: 'SoldLease', description: 'A lease on the provider’s cluster; the buyer is not shown.' },
);

export const OwnClusterSchema = Type.Object(
  {
    at: Timestamp('When the exchange read it.'),
    cluster: FleetClusterSchema,
    leases: Type.Array(SoldLeaseSchema, {
      description: 'Live leases, then those ended in the last 7 days; newest first, at most 100.',
    }),
  },
  { title: 'OwnCluster' },
);

export const OwnClusterCordonSchema = Type.Object(
  {
    cluster: FleetClusterSchema,
    changed: Type.Boolean({
      description:
        'Whether the call changed the cordon: cordoning a cordoned cluster, or uncordoning one that is not, changes nothing.',
    }),
    cancelled_order_ids: Type.Array(Type.String(), {
      description:
        'The open sells of the cluster and resales of leases on it that this call withdrew (cancel_reason cluster_cordoned); its live leases are kept.',
    }),
  },
  { title: 'OwnClusterCordon' },
);
