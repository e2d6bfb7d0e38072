// The leases as the console's Leases page shows them (issue 23,
// GET /v1/admin/leases?state=…): provisioning ones with their age and the
// time left before their provisioning timeout (D25), nearest first; active
// ones; recently ended ones with how long the agent took to confirm the
// revocation; failed ones with why.

import type { GpuType, LeaseStatus, Zone } from '@gpux/shared';

import type { Queryable } from '../db/database.js';

export const LEASE_LIST_STATES = ['provisioning', 'active', 'ended', 'failed'] as const;
export type LeaseListState = (typeof LEASE_LIST_STATES)[number];

export interface LeaseListItem {
  readonly lease_id: string;
  readonly status: LeaseStatus;
  readonly customer_id: string;
  readonly provider_account_id: string;
  readonly cluster_id: string;
  readonly gpu_type: GpuType;
  readonly zone: Zone;
  readonly gpu_count: number;
  readonly hourly_cost: number;
  readonly created_at: string;
  readonly start_time: string;
  readonly end_time: string;
  readonly age_seconds: number;
  readonly timeout_in_seconds: number | null;
  readonly ready_at: string | null;
  readonly ended_at: string | null;
  readonly end_reason: string | null;
  readonly revoked_at: string | null;
  readonly revocation_seconds: number | null;
  readonly failure: string | null;
}

interface Row {
  id: string;
  status: LeaseStatus;
  account_id: string;
  provider_account_id: string;
  cluster_id: string;
  gpu_type: GpuType;
  zone: Zone;
  gpu_count: number;
  hourly_cents: string;
  created_ms: string;
  start_ms: string;
  end_ms: string;
  ready_ms: string | null;
  ended_ms: string | null;
  end_reason: string | null;
  revoked_ms: string | null;
  agent_reason: string | null;
  operator_reason: string | null;
}

const WHERE: Record<LeaseListState, string> = {
  provisioning: `l.status = 'provisioning'`,
  active: `l.status = 'active'`,
  ended: `l.status IN ('terminated', 'expired')`,
  failed: `l.status = 'failed'`,
};

const ORDER: Record<LeaseListState, string> = {
  // Nearest its timeout first: the oldest opened.
  provisioning: 'l.start_ms, l.id',
  active: 'l.end_ms, l.id',
  ended: 'l.ended_ms DESC NULLS LAST, l.id',
  failed: 'l.ended_ms DESC NULLS LAST, l.id',
};

const ms = (v: string | null): number | null => (v === null ? null : Number(v));
const iso = (v: number | null): string | null => (v === null ? null : new Date(v).toISOString());

export async function leaseList(
  q: Queryable,
  state: LeaseListState,
  nowMs: number,
  provisioningTimeoutMs: number,
  limit: number,
  offset: number,
): Promise<{ total: number; leases: LeaseListItem[] }> {
  const [rows, [count]] = await Promise.all([
    q.query<Row>(
      `SELECT l.id, l.status, l.account_id, c.provider_account_id, l.cluster_id, l.gpu_type, l.zone,
              l.gpu_count, l.hourly_cents::text, l.created_ms::text, l.start_ms::text, l.end_ms::text,
              l.ready_ms::text, l.ended_ms::text, l.end_reason,
              a.revoked_ms::text, f.reason AS agent_reason,
              (SELECT g.reason FROM audit_log g
                WHERE g.target_type = 'lease' AND g.target_id = l.id AND g.action = 'lease.fail'
                ORDER BY g.at DESC LIMIT 1) AS operator_reason
         FROM leases l
         JOIN clusters c ON c.id = l.cluster_id
         LEFT JOIN lease_access a ON a.lease_id = l.id
         LEFT JOIN lease_failures f ON f.lease_id = l.id
        WHERE ${WHERE[state]}
        ORDER BY ${ORDER[state]} LIMIT $1 OFFSET $2`,
      [limit, offset],
    ),
    q.query<{ n: number }>(`SELECT count(*)::int AS n FROM leases l WHERE ${WHERE[state]}`),
  ]);
  return {
    total: count?.n ?? 0,
    leases: rows.map((r) => {
      // D25: the provisioning timeout runs from the lease's start (book-leases.ts).
      const opened = Number(r.start_ms);
      const ended = ms(r.ended_ms);
      const revoked = ms(r.revoked_ms);
      return {
        lease_id: r.id,
        status: r.status,
        customer_id: r.account_id,
        provider_account_id: r.provider_account_id,
        cluster_id: r.cluster_id,
        gpu_type: r.gpu_type,
        zone: r.zone,
        gpu_count: r.gpu_count,
        hourly_cost: Number(r.hourly_cents) / 100,
        created_at: new Date(Number(r.created_ms)).toISOString(),
        start_time: new Date(Number(r.start_ms)).toISOString(),
        end_time: new Date(Number(r.end_ms)).toISOString(),
        age_seconds: Math.max(0, Math.round((nowMs - opened) / 1000)),
        timeout_in_seconds:
          r.status === 'provisioning'
            ? Math.round((opened + provisioningTimeoutMs - nowMs) / 1000)
            : null,
        ready_at: iso(ms(r.ready_ms)),
        ended_at: iso(ended),
        end_reason: r.end_reason,
        revoked_at: iso(revoked),
        revocation_seconds:
          ended !== null && revoked !== null ? Math.max(0, (revoked - ended) / 1000) : null,
        failure:
          r.status !== 'failed'
            ? null
            : r.operator_reason !== null
              ? `operator: ${r.operator_reason}`
              : r.agent_reason !== null
                ? `agent: ${r.agent_reason}`
                : 'provisioning timed out',
      };
    }),
  };
}
