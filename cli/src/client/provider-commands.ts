// `gpux clusters [ID]` (issues 23, 24): a provider's own clusters, nodes,
// heartbeats, open sells and the leases sold on them, with its token (scope
// `provider`), from GET /v1/clusters and GET /v1/clusters/{id}; and
// `gpux cluster cordon ID` / `gpux cluster uncordon ID`: the provider takes
// its cluster off the market and puts it back (POST /v1/clusters/{id}/cordon,
// /uncordon).

import type { Schemas } from './api.js';
import { byId, endpoint } from './command.js';
import type { Input, Leaf } from './command.js';
import { money, paint, table, time } from './output.js';
import type { Style } from './output.js';

type S = Schemas;

const CLUSTER = ['<cluster-id>', 'one of your clusters (cls_…)'] as const;

function nodeRows(c: S['FleetCluster'], style: Style): string[][] {
  return c.nodes.map((n) => {
    const word = n.stale ? 'stale' : n.status;
    const bad = n.status === 'offline' || n.stale;
    return [
      c.cluster_id,
      `${c.gpu_type}/${c.zone}`,
      n.hostname,
      bad ? paint(word, 'red', style) : word,
      n.heartbeat_age_seconds === null ? '-' : `${n.heartbeat_age_seconds}s ago`,
      `${n.gpus.length}`,
    ];
  });
}

export function showOwnFleet(f: S['OwnFleet'], style: Style): string {
  const nodes = table(
    ['cluster', 'book', 'node', 'status', 'heartbeat', 'gpus'],
    f.clusters.flatMap((c) => nodeRows(c, style)),
    style,
  );
  const clusters = table(
    ['cluster', 'cordoned', 'open sells', 'leases', 'earned 24h', 'earned 7d', 'earned'],
    f.clusters.map((c) => [
      c.cluster_id,
      cordonOf(c, style),
      `${c.open_sells} (${c.open_sell_gpus} GPUs)`,
      `${c.leases_provisioning + c.leases_active}`,
      money(c.earnings.day),
      money(c.earnings.week),
      money(c.earnings.all),
    ]),
    style,
  );
  const paid =
    f.payouts.last_at === null
      ? 'none'
      : `${money(f.payouts.total)} in ${f.payouts.count} (last ${time(f.payouts.last_at, style)})`;
  return `${nodes}\n${clusters}\nearned ${money(f.earnings.all)}, paid out ${paid}, balance ${money(f.balance)}\n`;
}

/** Whether the cluster is cordoned, and by whom. */
function cordonOf(c: S['FleetCluster'], style: Style): string {
  if (c.cordoned_at === null) return 'no';
  return paint(`yes, by ${c.cordoned_by === 'provider' ? 'you' : 'the operators'}`, 'red', style);
}

export function showOwnCordon(r: S['OwnClusterCordon'], style: Style): string {
  const c = r.cluster;
  const state =
    c.cordoned_at === null
      ? 'not cordoned: its agent lists its free nodes again at its next heartbeat'
      : `cordoned since ${time(c.cordoned_at, style)}, by ${c.cordoned_by === 'provider' ? 'you' : 'the operators'}: it takes no new sells; live leases run out`;
  const withdrawn =
    r.cancelled_order_ids.length === 0
      ? ''
      : `sells withdrawn: ${r.cancelled_order_ids.join(' ')}\n`;
  return `${c.cluster_id} ${state}${r.changed ? '' : ' (unchanged)'}\n${withdrawn}`;
}

export function showOwnCluster(c: S['OwnCluster'], style: Style): string {
  const leases = table(
    ['lease', 'state', 'gpus', 'nodes', 'rate', 'per hour', 'start', 'end'],
    c.leases.map((l) => [
      l.lease_id,
      l.state,
      `${l.gpu_count}`,
      l.nodes.join(' '),
      money(l.rate),
      money(l.hourly_cost),
      time(l.start_time, style),
      time(l.ended_at ?? l.end_time, style),
    ]),
    style,
  );
  const nodes = table(
    ['cluster', 'book', 'node', 'status', 'heartbeat', 'gpus'],
    nodeRows(c.cluster, style),
    style,
  );
  return `${nodes}\ncordoned: ${cordonOf(c.cluster, style)}\n${leases}`;
}

const clusters = endpoint({
  name: 'clusters',
  summary: 'your clusters (providers): nodes and heartbeats, open sells, leases, earnings, payouts',
  example: 'gpux clusters',
  call: (c) => c.GET('/v1/clusters'),
  show: showOwnFleet,
});

/** The body of a cordon: the --reason, if one was given. */
function reasonBody(a: Input): { reason?: string } {
  return a.reason === undefined ? {} : { reason: a.reason };
}

const cordon = endpoint({
  name: 'cordon',
  args: [CLUSTER],
  summary:
    'take your cluster off the market: its sells withdrawn, no new ones taken, live leases run out',
  example: 'gpux cluster cordon cls_… --reason "disk replacement"',
  reason: 'optional',
  call: (c, a) => c.POST('/v1/clusters/{id}/cordon', { ...byId(a.arg(0)), body: reasonBody(a) }),
  show: showOwnCordon,
});

const uncordon = endpoint({
  name: 'uncordon',
  args: [CLUSTER],
  summary: 'put your cluster back on the market (not if the operators cordoned it)',
  example: 'gpux cluster uncordon cls_…',
  reason: 'optional',
  call: (c, a) => c.POST('/v1/clusters/{id}/uncordon', { ...byId(a.arg(0)), body: reasonBody(a) }),
  show: showOwnCordon,
});

const cluster: Leaf = {
  ...endpoint({
    name: 'cluster',
    args: [CLUSTER],
    summary:
      'one of your clusters: its nodes and the leases sold on it (buyers not shown); cordon, uncordon',
    example: 'gpux cluster cls_…',
    call: (c, a) => c.GET('/v1/clusters/{id}', { params: { path: { id: a.arg(0) } } }),
    show: showOwnCluster,
  }),
  children: [cordon, uncordon],
};

export const PROVIDER_COMMANDS: readonly Leaf[] = [clusters, cluster];
