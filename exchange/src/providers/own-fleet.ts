// A provider's own fleet (issue 23, GET /v1/clusters): the console's fleet
// read narrowed to the caller's clusters, with what the operators paid out
// to it, and the leases sold on one cluster without their buyers.

import { formatDollars, GpuxError } from '@gpux/shared';

import { fleetOf } from '../admin/fleet.js';
import type { FleetCluster, Earnings } from '../admin/fleet.js';
import type { Queryable } from '../db/database.js';
import { rateCentsOf } from '../leases/lease-money.js';
import type { LeaseRow } from '../market/rows.js';
import { iso } from '../views/format.js';
import { leaseStateOf } from '../views/leases.js';

export interface OwnFleet {
  at: string;
  account_id: string;
  earnings: Earnings;
  payouts: { total: number; count: number; last_at: string | null };
  balance: number;
  clusters: FleetCluster[];
}

const NO_EARNINGS: Earnings = { day: 0, week: 0, all: 0 };

export async function ownFleet(q: Queryable, accountId: string, now: number): Promise<OwnFleet> {
  const [providers, [money]] = await Promise.all([
    fleetOf(q, now, accountId),
    q.query<{ paid: string; n: number; last: Date | null; balance: string }>(
      `SELECT COALESCE(-sum(e.amount_cents) FILTER (WHERE t.kind = 'payout'), 0)::text AS paid,
              count(*) FILTER (WHERE t.kind = 'payout')::int AS n,
              max(t.created_at) FILTER (WHERE t.kind = 'payout') AS last,
              COALESCE(sum(e.amount_cents), 0)::text AS balance
         FROM ledger_entries e JOIN ledger_transactions t ON t.id = e.transaction_id
        WHERE e.account_id = $1`,
      [accountId],
    ),
  ]);
  const [mine] = providers;
  return {
    at: new Date(now).toISOString(),
    account_id: accountId,
    earnings: mine?.earnings ?? NO_EARNINGS,
    payouts: {
      total: formatDollars(Number(money?.paid ?? 0)),
      count: money?.n ?? 0,
      last_at: money?.last == null ? null : money.last.toISOString(),
    },
    balance: formatDollars(Number(money?.balance ?? 0)),
    clusters: mine?.clusters ?? [],
  };
}

export interface SoldLease {
  lease_id: string;
  gpu_count: number;
  nodes: string[];
  status: LeaseRow['status'];
  state: ReturnType<typeof leaseStateOf>;
  rate: number;
  hourly_cost: number;
  start_time: string;
  end_time: string;
  ended_at?: string;
  end_reason?: string;
}

const WEEK_MS = 7 * 24 * 3_600_000;

/** One of the caller's clusters with its leases; another's is not_found (D24). */
export async function ownCluster(
  q: Queryable,
  accountId: string,
  clusterId: string,
  now: number,
): Promise<{ at: string; cluster: FleetCluster; leases: SoldLease[] }> {
  const fleet = await ownFleet(q, accountId, now);
  const cluster = fleet.clusters.find((c) => c.cluster_id === clusterId);
  if (cluster === undefined) throw new GpuxError('not_found', `no cluster ${clusterId}`);
  const rows = await q.query<LeaseRow & { hostnames: string[] }>(
    `SELECT l.*, ARRAY(SELECT hostname FROM lease_nodes WHERE lease_id = l.id ORDER BY hostname) AS hostnames
       FROM leases l
      WHERE l.cluster_id = $1 AND (l.status IN ('provisioning', 'active') OR l.ended_ms > $2)
      ORDER BY (l.status IN ('provisioning', 'active')) DESC, l.created_ms DESC, l.id DESC
      LIMIT 100`,
    [clusterId, now - WEEK_MS],
  );
  return {
    at: fleet.at,
    cluster,
    leases: rows.map((l) => {
      const v: SoldLease = {
        lease_id: l.id,
        gpu_count: l.gpu_count,
        nodes: l.hostnames,
        status: l.status,
        state: leaseStateOf(l, now),
        rate: formatDollars(rateCentsOf(l)),
        hourly_cost: formatDollars(l.hourly_cents),
        start_time: iso(l.start_ms),
        end_time: iso(l.end_ms),
      };
      if (l.ended_ms !== null) v.ended_at = iso(l.ended_ms);
      if (l.end_reason !== null) v.end_reason = l.end_reason;
      return v;
    }),
  };
}
