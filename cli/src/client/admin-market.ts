// `gpux admin orders|leases|books|clusters|audit|platform …`: the
// operators' endpoints for orders and leases, markets, clusters, the audit
// log and the platform's account (docs/api/admin.md, docs/api/accounts.md).
// One entry per endpoint: its command line, its typed call, its output.

import { every } from './api.js';
import type { Body, Query, Schemas } from './api.js';
import { byId, endpoint, given, group, idAndReason } from './command.js';
import type { ArgSpec, Group } from './command.js';
import { PAGING, isoTime, list, oneOf, paging, wholeNumber } from './parse.js';
import {
  showAdminOrder,
  showAudit,
  showBook,
  showBooks,
  showCluster,
  showClusters,
  showCordon,
  showPlatform,
} from './render-admin.js';
import { showLease } from './render-leases.js';
import { showTransactions } from './render.js';
import {
  showClusterHistory,
  showFleet,
  showLeaseList,
  showPlatformDays,
} from './render-console.js';

type GpuType = Schemas['AdminBook']['gpu_type'];
type Zone = Schemas['AdminBook']['zone'];
type Action = Schemas['AuditEntry']['action'];
type TargetType = Schemas['AuditEntry']['target_type'];
export const GPU_TYPES = every<GpuType>()(['h100', 'h200', 'b200', 'b300']);
export const ZONES = every<Zone>()(['us-west-1', 'us-east-1', 'eu-west-1']);
const TARGET_TYPES = [
  'account',
  'cluster',
  'lease',
  'book',
] as const satisfies readonly TargetType[];
const ACTIONS = every<Action>()([
  'account.create',
  'account.suspend',
  'account.reinstate',
  'account.credit_limit',
  'account.adjustment',
  'account.payout',
  'token.issue',
  'token.revoke',
  'cluster.create',
  'cluster.cordon',
  'cluster.uncordon',
  'lease.fail',
  'lease.revoke',
  'book.halt',
  'book.resume',
]);

type LeaseState = Query<'/v1/admin/leases'>['state'];
const LEASE_STATES = every<LeaseState>()(['provisioning', 'active', 'ended', 'failed']);
const LEASE: ArgSpec = ['<lease-id>', 'the lease (lse_…)'];
const CLUSTER: ArgSpec = ['<cluster-id>', 'the cluster (cls_…)'];
export const BOOK: readonly ArgSpec[] = [
  ['<gpu-type>', GPU_TYPES.join(', '), oneOf(GPU_TYPES)],
  ['<zone>', ZONES.join(', '), oneOf(ZONES)],
];
const book = (a: { value<T>(i: number): T }) => ({
  params: { path: { gpu_type: a.value<GpuType>(0), zone: a.value<Zone>(1) } },
});

const orders: Group = group('orders', "any account's orders", 'gpux admin orders show ord_1a2b3c', [
  endpoint({
    name: 'show',
    args: [['<order-id>', 'the order (ord_…)']],
    summary: 'an order of any account, with its fills',
    example: 'gpux admin orders show ord_1a2b3c',
    call: (c, a) => c.GET('/v1/admin/orders/{id}', byId(a.arg(0))),
    show: showAdminOrder,
  }),
]);

const leases: Group = group(
  'leases',
  "any account's leases: read, fail a stuck one, revoke a live one",
  'gpux admin leases show lse_1a2b3c',
  [
    endpoint({
      name: 'list',
      summary:
        'leases by state: provisioning (nearest their timeout first), active, ended (with the revocation time), failed (with why)',
      example: 'gpux admin leases list --state provisioning',
      options: [
        {
          flags: '--state <state>',
          description: 'which leases',
          choices: LEASE_STATES,
          required: true,
        },
        ...PAGING,
      ],
      call: (c, a) =>
        c.GET('/v1/admin/leases', {
          params: {
            query: given<Query<'/v1/admin/leases'>>({
              state: a.opt<LeaseState>('state'),
              ...paging(a),
            }),
          },
        }),
      show: showLeaseList,
    }),
    endpoint({
      name: 'show',
      args: [LEASE],
      summary: 'a lease of any account, with its nodes and SSH endpoints',
      example: 'gpux admin leases show lse_1a2b3c',
      call: (c, a) => c.GET('/v1/admin/leases/{id}', byId(a.arg(0))),
      show: showLease,
    }),
    endpoint({
      name: 'fail',
      args: [LEASE],
      summary: 'fail a lease stuck provisioning: the buyer gets back all it paid',
      example:
        'gpux admin leases fail lse_1a2b3c --reason "cluster lost power during provisioning"',
      reason: 'required',
      call: (c, a) => c.POST('/v1/admin/leases/{id}/fail', idAndReason(a)),
      show: showLease,
    }),
    endpoint({
      name: 'revoke',
      args: [LEASE],
      summary: 'end a live lease now, refunding the remaining time',
      example: 'gpux admin leases revoke lse_1a2b3c --reason "abuse report 311"',
      reason: 'required',
      call: (c, a) => c.POST('/v1/admin/leases/{id}/revoke', idAndReason(a)),
      show: showLease,
    }),
  ],
);

const books: Group = group(
  'books',
  'the books (a GPU type in a zone): halt and resume trading',
  'gpux admin books halt h100 us-east-1 --reason "pricing incident"',
  [
    endpoint({
      name: 'list',
      summary: 'every book with its status and open orders',
      example: 'gpux admin books list',
      call: (c) => c.GET('/v1/admin/books'),
      show: showBooks,
    }),
    endpoint({
      name: 'halt',
      args: BOOK,
      summary: 'stop trading in the book: new orders refused, nothing matches; cancels still work',
      example: 'gpux admin books halt h100 us-east-1 --reason "suspected manipulation"',
      reason: 'required',
      call: (c, a) =>
        c.POST('/v1/admin/books/{gpu_type}/{zone}/halt', {
          ...book(a),
          body: { reason: a.reason ?? '' },
        }),
      show: showBook,
    }),
    endpoint({
      name: 'resume',
      args: BOOK,
      summary: 'trade in the book again; what fell due in the halt happens at once',
      example: 'gpux admin books resume h100 us-east-1 --reason "incident closed"',
      reason: 'required',
      call: (c, a) =>
        c.POST('/v1/admin/books/{gpu_type}/{zone}/resume', {
          ...book(a),
          body: { reason: a.reason ?? '' },
        }),
      show: showBook,
    }),
  ],
);

const clusters: Group = group(
  'clusters',
  "providers' clusters: list, create, cordon, uncordon",
  'gpux admin clusters list',
  [
    endpoint({
      name: 'fleet',
      summary:
        'every provider, cluster and node: status, heartbeat, GPUs, sells, leases, earnings; offline and stale first',
      example: 'gpux admin clusters fleet',
      call: (c) => c.GET('/v1/admin/fleet'),
      show: showFleet,
    }),
    endpoint({
      name: 'history',
      args: [CLUSTER],
      summary: 'the status changes of a cluster and its nodes, newest first',
      example: 'gpux admin clusters history cls_1a2b3c',
      options: PAGING,
      call: (c, a) =>
        c.GET('/v1/admin/clusters/{id}/history', {
          params: {
            path: { id: a.arg(0) },
            query: given<Query<'/v1/admin/clusters/{id}/history'>>(paging(a)),
          },
        }),
      show: showClusterHistory,
    }),
    endpoint({
      name: 'list',
      summary: 'every cluster with its nodes, oldest first',
      example: 'gpux admin clusters list',
      call: (c) => c.GET('/v1/admin/clusters'),
      show: showClusters,
    }),
    endpoint({
      name: 'create',
      summary: "a provider's cluster and its nodes",
      example:
        'gpux admin clusters create --provider acc_9z8y7x --gpu-type h100 --zone us-west-1 --nodes gpu-01,gpu-02',
      options: [
        { flags: '--provider <account-id>', description: "the provider's account", required: true },
        { flags: '--gpu-type <type>', description: 'its GPUs', choices: GPU_TYPES, required: true },
        { flags: '--zone <zone>', description: 'where it is', choices: ZONES, required: true },
        {
          flags: '--nodes <hostnames>',
          description: "its nodes' hostnames, comma-separated",
          parse: list,
          required: true,
        },
      ],
      reason: 'optional',
      call: (c, a) =>
        c.POST('/v1/admin/clusters', {
          body: given<Body<'/v1/admin/clusters'>>({
            provider_account_id: a.opt('provider'),
            gpu_type: a.opt<GpuType>('gpuType'),
            zone: a.opt<Zone>('zone'),
            nodes: a.opt<string[]>('nodes')?.map((hostname) => ({ hostname })),
            reason: a.reason,
          }),
        }),
      show: showCluster,
    }),
    endpoint({
      name: 'cordon',
      args: [CLUSTER],
      summary: "withdraw the cluster's sells and resales; it takes no new ones",
      example: 'gpux admin clusters cordon cls_1a2b3c --reason "failing disks, maintenance"',
      reason: 'required',
      call: (c, a) => c.POST('/v1/admin/clusters/{id}/cordon', idAndReason(a)),
      show: showCordon,
    }),
    endpoint({
      name: 'uncordon',
      args: [CLUSTER],
      summary: 'let the cluster take sells and resales again',
      example: 'gpux admin clusters uncordon cls_1a2b3c --reason "maintenance done"',
      reason: 'required',
      call: (c, a) => c.POST('/v1/admin/clusters/{id}/uncordon', idAndReason(a)),
      show: showCluster,
    }),
  ],
);

const audit = endpoint({
  name: 'audit',
  summary: 'the audit log: every change an operator made, newest first',
  example: 'gpux admin audit --action account.suspend --since 2026-05-01T00:00:00Z',
  options: [
    { flags: '--actor <actor>', description: "admin_token, or an operator's account id" },
    { flags: '--action <action>', description: 'one kind of change', choices: ACTIONS },
    { flags: '--target-type <type>', description: 'what was changed', choices: TARGET_TYPES },
    {
      flags: '--target-id <id>',
      description: 'the account, cluster, lease or book (h100/us-east-1)',
    },
    {
      flags: '--since <time>',
      description: 'at or after this time (ISO 8601 with zone)',
      parse: isoTime,
    },
    {
      flags: '--until <time>',
      description: 'before this time (ISO 8601 with zone)',
      parse: isoTime,
    },
    ...PAGING,
  ],
  call: (c, a) =>
    c.GET('/v1/admin/audit', {
      params: {
        query: given<Query<'/v1/admin/audit'>>({
          actor: a.opt('actor'),
          action: a.opt<Action>('action'),
          target_type: a.opt<TargetType>('targetType'),
          target_id: a.opt('targetId'),
          since: a.opt('since'),
          until: a.opt('until'),
          ...paging(a),
        }),
      },
    }),
  show: showAudit,
});

const platform: Group = group(
  'platform',
  "the platform's own account, where the fees go",
  'gpux admin platform show',
  [
    endpoint({
      name: 'show',
      summary: "the platform's balance and fees",
      example: 'gpux admin platform show',
      call: (c) => c.GET('/v1/admin/platform'),
      show: showPlatform,
    }),
    endpoint({
      name: 'transactions',
      summary: "the platform's ledger rows, newest first",
      example: 'gpux admin platform transactions --limit 50',
      options: PAGING,
      call: (c, a) =>
        c.GET('/v1/admin/platform/transactions', {
          params: { query: given<Query<'/v1/admin/platform/transactions'>>(paging(a)) },
        }),
      show: showTransactions,
    }),
    endpoint({
      name: 'days',
      summary:
        "the platform's fees, refunds and payouts per day, and the ledger's sum-to-zero check",
      example: 'gpux admin platform days --days 7',
      options: [
        {
          flags: '--days <n>',
          description: 'this many days back, today included (1 to 366; default 30)',
          parse: wholeNumber(1, 366),
        },
      ],
      call: (c, a) =>
        c.GET('/v1/admin/platform/days', {
          params: {
            query: given<Query<'/v1/admin/platform/days'>>({ days: a.opt<number>('days') }),
          },
        }),
      show: showPlatformDays,
    }),
  ],
);

export const MARKET_NODES = [orders, leases, books, clusters, audit, platform];
