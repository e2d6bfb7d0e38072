// The agent's view of its cluster's leases (D30) and its reports (D25, D26,
// D28, D32): provisioned (the lease becomes active and its access is kept,
// the kubeconfig encrypted), revoked, failed (D25's full refund at once).

import { GPUS_PER_NODE, leaseNamespace, leaseUser, sshUserOf } from '@gpux/shared';
import type { LeaseStatus } from '@gpux/shared';

import type { Principal } from '../accounts/accounts.js';
import { appendAccountEvents, leaseEvent } from '../account-events/events.js';
import { byHostname } from '../market/lease-events.js';
import type { Queryable } from '../db/database.js';
import type { LeaseRow } from '../market/rows.js';
import { checkCount } from './agent-input.js';
import { checkId, invalid, notFound, ownCluster } from './provider-context.js';
import type { ProviderContext } from './provider-context.js';

/** A lease as the agent provisions it: what its provision event carries (shared/src/events.ts). */
export interface ProviderLease {
  readonly leaseId: string;
  readonly namespace: string;
  readonly leaseUser: string;
  readonly nodes: readonly { hostname: string; sshUser: string }[];
  readonly gpuCount: number;
  readonly startTime: Date;
  readonly endTime: Date;
  readonly sshPublicKeys: readonly string[];
  readonly status: LeaseStatus;
  readonly sourceLeaseId: string;
}

/** The cluster's live leases that have started, with their nodes and key snapshots. */
export async function listLeases(
  ctx: ProviderContext,
  caller: Principal,
  clusterId: string,
): Promise<{ leases: ProviderLease[]; asOf: Date }> {
  const cluster = await ownCluster(ctx, caller, clusterId);
  const now = ctx.market.clock.now();
  const leases = await ctx.db.query<LeaseRow>(
    `SELECT * FROM leases WHERE cluster_id = $1 AND status IN ('provisioning', 'active')
        AND start_ms <= $2 ORDER BY start_ms, id`,
    [cluster.id, now],
  );
  const ids = leases.map((l) => l.id);
  const nodes = await ctx.db.query<{ lease_id: string; hostname: string; node_id: string }>(
    'SELECT lease_id, hostname, node_id FROM lease_nodes WHERE lease_id = ANY($1::text[])',
    [ids],
  );
  const keys = await ctx.db.query<{ lease_id: string; public_key: string }>(
    'SELECT lease_id, public_key FROM lease_keys WHERE lease_id = ANY($1::text[]) ORDER BY lease_id, position',
    [ids],
  );
  const group = <T extends { lease_id: string }>(rows: readonly T[]): Map<string, T[]> => {
    const m = new Map<string, T[]>();
    for (const r of rows) m.set(r.lease_id, [...(m.get(r.lease_id) ?? []), r]);
    return m;
  };
  const nodesBy = group(nodes);
  const keysBy = group(keys);
  return {
    asOf: new Date(now),
    leases: leases.map((l) => ({
      leaseId: l.id,
      namespace: leaseNamespace(l.id),
      leaseUser: leaseUser(l.id),
      // In the provision event's order (market/lease-events.ts).
      nodes: byHostname(nodesBy.get(l.id) ?? []).map((n, i) => ({
        hostname: n.hostname,
        sshUser: sshUserOf(l.id, i + 1),
      })),
      gpuCount: l.gpu_count,
      startTime: new Date(l.start_ms),
      endTime: new Date(l.end_ms),
      sshPublicKeys: (keysBy.get(l.id) ?? []).map((k) => k.public_key),
      status: l.status,
      sourceLeaseId: l.source_lease_id ?? '',
    })),
  };
}

/** A lease of the caller's cluster, or INVALID_ARGUMENT. */
async function leaseOfCluster(
  ctx: ProviderContext,
  caller: Principal,
  clusterId: string,
  leaseId: string,
): Promise<LeaseRow> {
  const cluster = await ownCluster(ctx, caller, clusterId);
  checkId(leaseId, 'lease_id');
  const [lease] = await ctx.db.query<LeaseRow>('SELECT * FROM leases WHERE id = $1', [leaseId]);
  if (lease === undefined || lease.cluster_id !== cluster.id) {
    throw notFound(`cluster ${cluster.id} has no lease ${leaseId}`);
  }
  return lease;
}

export interface ProvisionedReport {
  readonly clusterId: string;
  readonly leaseId: string;
  readonly sshEndpoints: readonly { hostname: string; endpoint: string }[];
  readonly sshHostKeys: readonly string[];
  readonly kubeconfig: string;
}

const ENDPOINT = /^[A-Za-z0-9._-]{1,64}@[A-Za-z0-9.:[\]-]{1,253}:\d{1,5}$/;
const HOST_KEY =
  /^(ssh-ed25519|ssh-rsa|ecdsa-sha2-nistp(256|384|521)) [A-Za-z0-9+/=]{16,4000}( .{0,200})?$/;

/**
 * D25: the lease's access exists, the lease becomes active. The access
 * (endpoints, host keys, the kubeconfig sealed) is kept first, so that once
 * the lease reads active its access is there. Reported again for an active
 * lease, it replaces the access (a refreshed token, D28). A lease that has
 * ended keeps nothing: its agent revokes it.
 */
export async function reportProvisioned(
  ctx: ProviderContext,
  caller: Principal,
  r: ProvisionedReport,
): Promise<LeaseStatus> {
  const lease = await leaseOfCluster(ctx, caller, r.clusterId, r.leaseId);
  // Sizes were checked before (agent-input.ts); the counts need the lease.
  const nodes = lease.gpu_count / GPUS_PER_NODE;
  const why = `lease ${lease.id} has ${nodes} nodes`;
  checkCount(r.sshEndpoints, 'ssh_endpoints', nodes, why);
  checkCount(r.sshHostKeys, 'ssh_host_keys', nodes, why);
  r.sshEndpoints.forEach((e, i) => {
    if (!ENDPOINT.test(e.endpoint))
      throw invalid(`ssh_endpoints[${i}].endpoint "${e.endpoint}" is not user@host:port`);
  });
  r.sshHostKeys.forEach((k, i) => {
    if (!HOST_KEY.test(k)) throw invalid(`ssh_host_keys[${i}] is not an OpenSSH public key line`);
  });
  if (lease.status !== 'provisioning' && lease.status !== 'active') return lease.status;
  const now = ctx.market.clock.now();
  const keep = (q: Queryable): Promise<unknown> =>
    q.query(
      `INSERT INTO lease_access (lease_id, ssh_endpoints, ssh_host_keys, kubeconfig_sealed, reported_ms)
     VALUES ($1, $2, $3, $4, $5)
     ON CONFLICT (lease_id) DO UPDATE SET ssh_endpoints = EXCLUDED.ssh_endpoints,
       ssh_host_keys = EXCLUDED.ssh_host_keys, kubeconfig_sealed = EXCLUDED.kubeconfig_sealed,
       reported_ms = EXCLUDED.reported_ms`,
      [
        lease.id,
        JSON.stringify(r.sshEndpoints),
        JSON.stringify(r.sshHostKeys),
        r.kubeconfig === '' ? null : ctx.secrets.seal(r.kubeconfig, lease.id),
        now,
      ],
    );
  // A refresh (D28) is the buyer's lease.kubeconfig_refreshed, written with it.
  if (lease.status === 'active') {
    await ctx.db.transaction(async (tx) => {
      await keep(tx);
      await appendAccountEvents(tx, [leaseEvent(lease, 'lease.kubeconfig_refreshed', now)]);
    });
  } else await keep(ctx.db);
  if (lease.status === 'active') return 'active';
  const ready = await ctx.market
    .writer(lease.gpu_type, lease.zone)
    .submit((state, cs) => state.leaseReady(lease.id, ctx.market.clock.now(), cs));
  if (ready) {
    ctx.logger.info({ lease: lease.id, readyMs: now - lease.start_ms }, 'lease provisioned');
    ctx.observe?.provisioned(Math.max(0, now - lease.start_ms) / 1000);
    return 'active';
  }
  return currentStatus(ctx, lease.id);
}

/** D26: every access of the lease is gone; its kubeconfig is not kept any longer. */
export async function reportRevoked(
  ctx: ProviderContext,
  caller: Principal,
  clusterId: string,
  leaseId: string,
): Promise<LeaseStatus> {
  const lease = await leaseOfCluster(ctx, caller, clusterId, leaseId);
  const now = ctx.market.clock.now();
  // `before`: revoked_ms as it was, so that only the first confirmation is timed.
  const [access] = await ctx.db.query<{ before: string | null }>(
    `UPDATE lease_access a SET revoked_ms = COALESCE(a.revoked_ms, $2), kubeconfig_sealed = NULL
       FROM (SELECT lease_id, revoked_ms AS before FROM lease_access WHERE lease_id = $1 FOR UPDATE) b
      WHERE a.lease_id = b.lease_id RETURNING b.before`,
    [lease.id, now],
  );
  // The first confirmation of an ended lease: how long its access outlived it.
  if (access !== undefined && access.before === null && lease.ended_ms !== null) {
    ctx.observe?.revoked(Math.max(0, now - Number(lease.ended_ms)) / 1000);
  }
  return lease.status;
}

/** D25: the agent cannot provision the lease: it fails now, refunded in full. */
export async function reportFailed(
  ctx: ProviderContext,
  caller: Principal,
  r: { clusterId: string; leaseId: string; reason: string },
): Promise<LeaseStatus> {
  const lease = await leaseOfCluster(ctx, caller, r.clusterId, r.leaseId);
  if (lease.status !== 'provisioning') return lease.status;
  const failed = await ctx.market
    .writer(lease.gpu_type, lease.zone)
    .submit((state, cs) => state.leaseFailed(lease.id, ctx.market.clock.now(), cs));
  if (failed) {
    ctx.logger.warn({ lease: lease.id, reason: r.reason }, 'agent could not provision the lease');
    // Why, for the operators' console (GET /v1/admin/leases?state=failed).
    await ctx.db.query(
      `INSERT INTO lease_failures (lease_id, reason, reported_ms) VALUES ($1, $2, $3)
       ON CONFLICT (lease_id) DO NOTHING`,
      [lease.id, r.reason.slice(0, 1000) || 'no reason given', ctx.market.clock.now()],
    );
  }
  return currentStatus(ctx, lease.id);
}

async function currentStatus(ctx: ProviderContext, leaseId: string): Promise<LeaseStatus> {
  const [row] = await ctx.db.query<{ status: LeaseStatus }>(
    'SELECT status FROM leases WHERE id = $1',
    [leaseId],
  );
  return row?.status ?? 'failed';
}
