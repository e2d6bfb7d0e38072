// The human output of leases and SSH keys (docs/api/leases.md,
// docs/api/accounts.md): a lease with its access, a list with the time
// left (highlighted when under an hour), a termination with its refund, a
// resale, the keys.

import type { Schemas } from './api.js';
import { fields, money, pageLine, paint, table, time } from './output.js';
import type { Style } from './output.js';

type S = Schemas;
type Lease = S['LeaseDetail'];

const HOUR = 3_600_000;

/** A span of time in words: `2 h 05 min`, `45 min`, `under a minute`. */
export function span(ms: number): string {
  if (ms < 60_000) return 'under a minute';
  const minutes = Math.floor(ms / 60_000);
  const h = Math.floor(minutes / 60);
  const m = minutes % 60;
  if (h === 0) return `${m} min`;
  if (h >= 48) return `${Math.floor(h / 24)} d ${h % 24} h`;
  return `${h} h ${String(m).padStart(2, '0')} min`;
}

/** The time a lease has left at `now`: `-` once it ended; under an hour in yellow. */
export function timeLeft(l: Pick<Lease, 'status' | 'end_time'>, now: number, style: Style): string {
  if (l.status !== 'active' && l.status !== 'provisioning') return '-';
  const left = Date.parse(l.end_time) - now;
  if (Number.isNaN(left)) return '-';
  return left < HOUR ? paint(span(Math.max(0, left)), 'yellow', style) : span(left);
}

function leaseStatus(l: Pick<Lease, 'status' | 'end_reason'>, style: Style): string {
  const bad = ['failed', 'terminated', 'expired'];
  const s = bad.includes(l.status) ? paint(l.status, 'red', style) : l.status;
  return l.end_reason === undefined ? s : `${s} (${l.end_reason})`;
}

/** One lease with where and how to reach it. */
export function showLease(l: Lease, style: Style, now?: number): string {
  const pairs: (readonly [string, string])[] = [
    ['lease', l.lease_id],
    ['customer', l.customer_id],
    ['order', l.order_id],
    ['what', `${l.instance_type} in ${l.zone}`],
    ['status', leaseStatus(l, style)],
    ['state', l.state],
    ['rate', `${money(l.rate)}/GPU-h (${money(l.hourly_cost)}/h in all)`],
    ['from', time(l.start_time, style)],
    ['until', time(l.end_time, style)],
    ['cluster', l.cluster_id],
    ['nodes', l.nodes.join(', ')],
  ];
  if (now !== undefined) pairs.push(['time left', timeLeft(l, now, style)]);
  if (l.transfer_time !== undefined) pairs.push(['transfer', time(l.transfer_time, style)]);
  if (l.ended_at !== undefined) pairs.push(['ended', time(l.ended_at, style)]);
  if (l.refund_amount !== undefined) pairs.push(['refund', money(l.refund_amount)]);
  l.ssh_access.forEach((a, i) =>
    pairs.push([i === 0 ? 'ssh' : '', `${a.endpoint} (${a.hostname})`]),
  );
  return fields(pairs, style);
}

export function showLeases(page: S['LeaseList'], style: Style, now: number): string {
  const rows = page.leases.map((l) => [
    l.lease_id,
    l.instance_type,
    l.zone,
    leaseStatus(l, style),
    `${money(l.rate)}/GPU-h`,
    time(l.end_time, style),
    timeLeft(l, now, style),
  ]);
  return (
    table(['lease', 'instance', 'zone', 'status', 'rate', 'ends', 'left'], rows, style) +
    pageLine(page, page.leases.length, style)
  );
}

/** How to reach each ready lease. */
export function connectLines(leases: readonly Lease[], ready: ReadonlySet<string>): string {
  const lines: string[] = [];
  for (const l of leases) {
    if (!ready.has(l.lease_id)) continue;
    lines.push(
      '',
      `lease ${l.lease_id} (${l.instance_type} in ${l.zone}) is ready; connect with:`,
      `  gpux ssh ${l.lease_id}`,
      `  or, after gpux ssh-config: ssh ${l.lease_id}`,
    );
  }
  return lines.length === 0 ? '' : `${lines.join('\n')}\n`;
}

export function showTermination(t: S['Termination'], style: Style): string {
  return fields(
    [
      ['lease', t.lease_id],
      ['status', leaseStatus(t, style)],
      ['terminated', time(t.terminated_at, style)],
      ['was to end', time(t.original_end_time, style)],
      ['unused', span(t.milliseconds_remaining)],
      ['refund', paint(money(t.refund_amount), 'green', style)],
    ],
    style,
  );
}

export function showResell(r: S['Resell'], style: Style): string {
  if (r.status === 'filled') {
    return fields(
      [
        ['resale order', r.order_id],
        ['lease', r.lease_id],
        ['status', paint('sold', 'green', style)],
        ['price', `${money(r.limit_price)}/GPU-h`],
        ['sale', money(r.sale_amount)],
        ['fee', money(r.platform_fee)],
        ['you get', `${money(r.net_recovery)} + ${money(r.original_refund)} refunded`],
        ['in all', paint(money(r.total_recovery), 'bold', style)],
        ['transfer', time(r.transfer_time, style)],
      ],
      style,
    );
  }
  return fields(
    [
      ['resale order', r.order_id],
      ['lease', r.lease_id],
      ['status', 'pending: offered in the book'],
      ['price', `${money(r.limit_price)}/GPU-h`],
      ['offered', `${time(r.available_from, style)} until ${time(r.available_until, style)}`],
      ['if all sells', `${money(r.net_recovery)} (${money(r.potential_recovery)} less the fee)`],
      ['cancel with', `gpux cancel ${r.order_id}`],
    ],
    style,
  );
}

export function showKeys(list: S['SshKeyList'], style: Style): string {
  const rows = list.ssh_keys.map((k) => [
    k.ssh_key_id,
    k.name,
    k.type,
    k.fingerprint,
    time(k.created_at, style),
  ]);
  return table(['key', 'name', 'type', 'fingerprint', 'added'], rows, style);
}

export function showKey(k: S['SshKey'], style: Style): string {
  return fields(
    [
      ['key', k.ssh_key_id],
      ['name', k.name],
      ['type', k.type],
      ['fingerprint', k.fingerprint],
      ['added', time(k.created_at, style)],
    ],
    style,
  );
}
