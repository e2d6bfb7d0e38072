// The human output of the admin reads the web console is built on (issue
// 23, docs/api/admin.md): the fleet, a cluster's history, the lease lists,
// the platform's money per day.

import type { Schemas } from './api.js';
import { money, pageLine, paint, table, text, time } from './output.js';
import type { Style } from './output.js';

type S = Schemas;

const age = (seconds: number | null): string => (seconds === null ? '-' : `${seconds}s`);

export function showFleet(f: S['Fleet'], style: Style): string {
  const rows = f.providers.flatMap((p) =>
    p.clusters.flatMap((c) =>
      c.nodes.map((n) => {
        const status = n.status === 'offline' || n.stale ? 'red' : undefined;
        const word = n.stale ? 'stale' : n.status;
        return [
          p.name,
          c.cluster_id,
          `${c.gpu_type}/${c.zone}`,
          n.hostname,
          status === undefined ? word : paint(word, status, style),
          age(n.heartbeat_age_seconds),
          String(n.gpus.length),
          text(c.agent_version),
          `${c.open_sells}`,
          `${c.leases_provisioning + c.leases_active}`,
          money(c.earnings.day),
        ];
      }),
    ),
  );
  return table(
    [
      'provider',
      'cluster',
      'book',
      'node',
      'status',
      'heartbeat',
      'gpus',
      'agent',
      'sells',
      'leases',
      'earned 24h',
    ],
    rows,
    style,
  );
}

export function showClusterHistory(h: S['ClusterHistory'], style: Style): string {
  const rows = h.changes.map((c) => [
    time(c.at, style),
    c.hostname ?? '(cluster)',
    c.field,
    `${text(c.before)} → ${text(c.after)}`,
  ]);
  return table(['at', 'node', 'what', 'change'], rows, style) + pageLine(h, rows.length, style);
}

export function showLeaseList(l: S['AdminLeaseList'], style: Style): string {
  const rows = l.leases.map((x) => [
    x.lease_id,
    x.status,
    x.cluster_id,
    `${x.gpu_count}`,
    `${x.age_seconds}s`,
    x.timeout_in_seconds === null ? '-' : `${x.timeout_in_seconds}s`,
    x.revocation_seconds === null ? '-' : `${x.revocation_seconds}s`,
    text(x.failure),
  ]);
  return (
    table(
      ['lease', 'status', 'cluster', 'gpus', 'age', 'timeout in', 'revoked after', 'failure'],
      rows,
      style,
    ) + pageLine(l, rows.length, style)
  );
}

export function showPlatformDays(d: S['PlatformDays'], style: Style): string {
  const rows = d.days.map((x) => [
    x.day,
    money(x.fees),
    money(x.fee_refunds),
    money(x.adjustments),
    money(x.platform_net),
    money(x.refunds),
    money(x.payouts),
    money(x.ledger_sum),
  ]);
  const check = d.ledger.balanced
    ? 'ledger sums to zero'
    : paint(
        `ledger does NOT sum to zero: ${money(d.ledger.sum)}, ${d.ledger.unbalanced_transactions} unbalanced transactions`,
        'red',
        style,
      );
  return (
    table(
      ['day', 'fees', 'fee refunds', 'adjustments', 'platform net', 'refunds', 'payouts', 'Σ'],
      rows,
      style,
    ) + `${check} (${d.ledger.entries} entries)\n`
  );
}
