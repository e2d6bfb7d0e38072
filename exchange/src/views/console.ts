// The JSON of the admin reads the console is built on (issue 23,
// docs/api/admin.md): the fleet, a cluster's history, the lease lists and
// the platform's money per day. Money in dollars rounded to cents (D1).

import { GPU_TYPES, LEASE_STATUSES, ZONES } from '@gpux/shared';
import { Type } from '@sinclair/typebox';
import type { Static } from '@sinclair/typebox';

import { LEASE_LIST_STATES } from '../admin/lease-lists.js';
import {
  Defaulted,
  GpuCount,
  Dollars,
  Nullable,
  PAGE_FIELDS,
  PAGE_QUERY,
  StringEnum,
  Timestamp,
} from '../http/schema.js';
import { CordonedBySchema } from './accounts.js';
import { sse } from './feed.js';

const NODE_STATUSES = ['available', 'online', 'offline'] as const;

export const EarningsSchema = Type.Object(
  {
    day: Dollars('The provider’s ledger rows of leases on it in the last 24 hours.'),
    week: Dollars('… in the last 7 days.'),
    all: Dollars('… ever.'),
  },
  { title: 'FleetEarnings' },
);

const FleetGpuSchema = Type.Object(
  {
    index: Type.Integer(),
    model: Type.String({ description: 'As the agent’s GPU query names it.' }),
    memory_mib: Type.Integer(),
    utilization_percent: Type.Integer(),
    temperature_c: Type.Integer(),
  },
  { title: 'FleetGpu' },
);

const FleetNodeSchema = Type.Object(
  {
    node_id: Type.String(),
    hostname: Type.String(),
    status: StringEnum(NODE_STATUSES, {
      description: 'available: no agent yet; online / offline: by its agent’s heartbeats.',
    }),
    stale: Type.Boolean({
      description:
        'Online, but its recorded heartbeat (written at least every 30 s, not at each one) is older than 30 s plus 2 of its agent’s heartbeat intervals.',
    }),
    last_heartbeat_at: Nullable(Timestamp()),
    heartbeat_age_seconds: Nullable(
      Type.Integer({
        minimum: 0,
        description: 'Age of the recorded heartbeat: up to 30 s more than the last one heard.',
      }),
    ),
    problem: Nullable(Type.String({ description: 'What the agent’s health check found.' })),
    gpus: Type.Array(FleetGpuSchema, { description: 'As the last heartbeat reported them.' }),
  },
  { title: 'FleetNode' },
);

export const FleetClusterSchema = Type.Object(
  {
    cluster_id: Type.String(),
    gpu_type: StringEnum(GPU_TYPES),
    zone: StringEnum(ZONES),
    cordoned_at: Nullable(
      Timestamp('When it was cordoned (its sells withdrawn, no new ones); null when not cordoned.'),
    ),
    cordoned_by: CordonedBySchema,
    agent_attached_at: Nullable(Timestamp()),
    agent_version: Nullable(Type.String()),
    provisioner: Nullable(Type.String()),
    heartbeat_seconds: Nullable(Type.Number({ description: 'The agent’s heartbeat interval.' })),
    attention: Type.Boolean({ description: 'A node of it is offline or stale.' }),
    nodes_online: Type.Integer({ minimum: 0 }),
    nodes_offline: Type.Integer({ minimum: 0 }),
    nodes_stale: Type.Integer({ minimum: 0 }),
    open_sells: Type.Integer({ minimum: 0, description: 'Sells of it in the book.' }),
    open_sell_gpus: Type.Integer({ minimum: 0 }),
    leases_provisioning: Type.Integer({ minimum: 0 }),
    leases_active: Type.Integer({ minimum: 0 }),
    earnings: EarningsSchema,
    nodes: Type.Array(FleetNodeSchema, { description: 'Offline and stale first.' }),
  },
  { title: 'FleetCluster' },
);

const FleetProviderSchema = Type.Object(
  {
    account_id: Type.String(),
    name: Type.String(),
    suspended: Type.Boolean(),
    attention: Type.Boolean({ description: 'A cluster of it needs attention.' }),
    earnings: EarningsSchema,
    clusters: Type.Array(FleetClusterSchema, { description: 'Those needing attention first.' }),
  },
  { title: 'FleetProvider' },
);

export const FleetSchema = Type.Object(
  {
    at: Timestamp('When the exchange read it.'),
    providers: Type.Array(FleetProviderSchema, {
      description: 'Providers with a cluster; those needing attention first.',
    }),
  },
  { title: 'Fleet' },
);

export const ClusterHistorySchema = Type.Object(
  {
    cluster_id: Type.String(),
    changes: Type.Array(
      Type.Object(
        {
          at: Timestamp(),
          node_id: Nullable(Type.String({ description: 'null: a change of the cluster itself.' })),
          hostname: Nullable(Type.String()),
          field: StringEnum(['status', 'cordon', 'agent'] as const, {
            description:
              'status: a node’s (available, online, offline); cordon: cordoned / uncordoned; agent: the agent attached or its version changed.',
          }),
          before: Nullable(Type.String()),
          after: Nullable(Type.String()),
        },
        { title: 'ClusterStatusChange' },
      ),
      { description: 'Newest first.' },
    ),
    ...PAGE_FIELDS,
  },
  { title: 'ClusterHistory' },
);

export const LeaseListQuery = Type.Object(
  {
    state: StringEnum(LEASE_LIST_STATES, {
      description:
        'provisioning (nearest its timeout first), active (ending soonest first), ended (terminated or expired, newest first), failed (newest first).',
    }),
    ...PAGE_QUERY,
  },
  { additionalProperties: false },
);

export const LeaseListSchema = Type.Object(
  {
    state: StringEnum(LEASE_LIST_STATES),
    provisioning_timeout_seconds: Type.Integer({
      description: 'GPUX_PROVISIONING_TIMEOUT_SECONDS: a lease provisioning longer fails.',
    }),
    leases: Type.Array(
      Type.Object(
        {
          lease_id: Type.String(),
          status: StringEnum(LEASE_STATUSES),
          customer_id: Type.String(),
          provider_account_id: Type.String(),
          cluster_id: Type.String(),
          gpu_type: StringEnum(GPU_TYPES),
          zone: StringEnum(ZONES),
          gpu_count: GpuCount(),
          hourly_cost: Dollars('For the whole lease.'),
          created_at: Timestamp(),
          start_time: Timestamp(),
          end_time: Timestamp(),
          age_seconds: Type.Integer({ minimum: 0, description: 'Since its start.' }),
          timeout_in_seconds: Nullable(
            Type.Integer({
              description: 'Provisioning: left before it fails (negative: overdue).',
            }),
          ),
          ready_at: Nullable(Timestamp()),
          ended_at: Nullable(Timestamp()),
          end_reason: Nullable(Type.String()),
          revoked_at: Nullable(Timestamp('When the agent confirmed the access revoked.')),
          revocation_seconds: Nullable(
            Type.Number({ description: 'From its end to the agent’s confirmation.' }),
          ),
          failure: Nullable(
            Type.String({
              description:
                'Failed: "operator: <reason>", "agent: <reason>" or "provisioning timed out".',
            }),
          ),
        },
        { title: 'AdminLeaseListItem' },
      ),
    ),
    ...PAGE_FIELDS,
  },
  { title: 'AdminLeaseList' },
);

export const PlatformDaysQuery = Type.Object(
  { days: Defaulted(Type.Integer({ minimum: 1, maximum: 366, default: 30 })) },
  { additionalProperties: false },
);

export const PlatformDaysSchema = Type.Object(
  {
    days: Type.Array(
      Type.Object(
        {
          day: Type.String({ description: 'A UTC day, YYYY-MM-DD.' }),
          fees: Dollars('Fees the platform earned.'),
          fee_refunds: Dollars('Fees it gave back (negative).'),
          adjustments: Dollars('Its side of operators’ adjustments.'),
          platform_net: Dollars('All its ledger rows of the day.'),
          refunds: Dollars('Refunds to customers.'),
          payouts: Dollars('Paid out to providers.'),
          transactions: Type.Integer({ minimum: 0 }),
          ledger_sum: Dollars('Σ of every ledger row of the day: 0.'),
        },
        { title: 'PlatformDay' },
      ),
      { description: 'Days with ledger rows, newest first.' },
    ),
    ledger: Type.Object(
      {
        sum: Dollars('Σ of every ledger row ever: 0.'),
        entries: Type.Integer({ minimum: 0 }),
        unbalanced_transactions: Type.Integer({ minimum: 0 }),
        balanced: Type.Boolean({ description: 'The sum is 0 and no transaction is unbalanced.' }),
      },
      { title: 'LedgerCheck' },
    ),
  },
  { title: 'PlatformDays' },
);

/** The `leases` event of GET /v1/console/events: how many leases are in each state. */
export const ConsoleLeaseCountsSchema = Type.Object(
  {
    provisioning: Type.Integer({ minimum: 0 }),
    active: Type.Integer({ minimum: 0 }),
    ended: Type.Integer({ minimum: 0, description: 'Terminated or expired.' }),
    failed: Type.Integer({ minimum: 0 }),
    last_end: Type.String({
      description:
        'When a lease last ended, in milliseconds since the epoch as a decimal string ("0": none yet): it changes when a lease ends while the counts may not.',
    }),
  },
  { title: 'ConsoleLeaseCounts' },
);
export type ConsoleLeaseCountsJson = Static<typeof ConsoleLeaseCountsSchema>;

/** GET /v1/console/events as one schema: its server-sent events (as FeedStreamSchema). */
export const ConsoleEventsSchema = Type.Array(
  Type.Union([sse('fleet', FleetSchema, false), sse('leases', ConsoleLeaseCountsSchema, false)]),
  {
    description:
      'Server-sent events (text/event-stream): `event:` the type, `data:` one line of JSON. `fleet` (the Fleet of GET /v1/admin/fleet) and `leases` (the lease counts per state), each sent first and then whenever it changes; `: keep-alive` comments between.',
  },
);
