// `gpux clusters [ID]` (issues 23, 24): a provider's own clusters, nodes,
// heartbeats, open sells and the leases sold on them, with its token (scope
// `provider`), from GET /v1/clusters and GET /v1/clusters/{id}.

import type { Schemas } from './api.js';
import { endpoint } from './command.js';
import type { Leaf } from './command.js';
import { money, paint, table, time } from './output.js';
import type { Style } from './output.js';

type S = Schemas;

const CLUSTER = ['<cluster-id>', 'one of your clusters (clu_…)'] as const;

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
      c.cordoned_at === null ? 'no' : paint('yes', 'red', style),
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
  return `${table(['cluster', 'book', 'node', 'status', 'heartbeat', 'gpus'], nodeRows(c.cluster, style), style)}\n${leases}`;
}

const clusters = endpoint({
  name: 'clusters',
  summary: 'your clusters (providers): nodes and heartbeats, open sells, leases, earnings, payouts',
  example: 'gpux clusters',
  call: (c) => c.GET('/v1/clusters'),
  show: showOwnFleet,
});

const cluster = endpoint({
  name: 'cluster',
  args: [CLUSTER],
  summary: 'one of your clusters: its nodes and the leases sold on it (buyers not shown)',
  example: 'gpux cluster clu_…',
  call: (c, a) => c.GET('/v1/clusters/{id}', { params: { path: { id: a.arg(0) } } }),
  show: showOwnCluster,
});

export const PROVIDER_COMMANDS: readonly Leaf[] = [clusters, cluster];
