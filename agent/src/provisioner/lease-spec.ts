// A lease as the agent provisions it, from either source: the provision
// event (shared/src/events.ts) or the exchange's lease list for
// reconciliation (agent.proto Lease), which carry the same fields.

import type { Lease } from '@gpux/proto';
import type { LeaseProvisionEvent } from '@gpux/shared';

export interface LeaseNodeSpec {
  readonly hostname: string;
  /** `<lease_user>-<k>` for the k-th node (1-based), sshUserOf. */
  readonly sshUser: string;
}

export interface LeaseSpec {
  readonly leaseId: string;
  readonly namespace: string;
  readonly leaseUser: string;
  readonly nodes: readonly LeaseNodeSpec[];
  readonly gpuCount: number;
  /** The exchange's clock; also when its provision event was made (D30, ListLeases as_of). */
  readonly startMs: number;
  readonly endMs: number;
  /** D32: exactly the keys the buyer had at the fill. */
  readonly sshPublicKeys: readonly string[];
  /** D27: a resale takes over this lease's nodes. */
  readonly sourceLeaseId: string | null;
}

export function leaseSpecFromEvent(e: LeaseProvisionEvent): LeaseSpec {
  return {
    leaseId: e.lease_id,
    namespace: e.namespace,
    leaseUser: e.lease_user,
    nodes: e.nodes.map((n) => ({ hostname: n.hostname, sshUser: n.ssh_user })),
    gpuCount: e.gpu_count,
    startMs: e.start_ms,
    endMs: e.end_ms,
    sshPublicKeys: [...e.ssh_public_keys],
    sourceLeaseId: e.source_lease_id,
  };
}

export function leaseSpecFromProto(l: Lease): LeaseSpec {
  return {
    leaseId: l.leaseId,
    namespace: l.namespace,
    leaseUser: l.leaseUser,
    nodes: l.nodes.map((n) => ({ hostname: n.hostname, sshUser: n.sshUser })),
    gpuCount: l.gpuCount,
    startMs: l.startTime?.getTime() ?? 0,
    endMs: l.endTime?.getTime() ?? 0,
    sshPublicKeys: [...l.sshPublicKeys],
    sourceLeaseId: l.sourceLeaseId === '' ? null : l.sourceLeaseId,
  };
}

/** A lease record read back from where a provisioner kept it (a file, an annotation): checked, not trusted. */
export function isLeaseSpec(v: unknown, leaseId: string): v is LeaseSpec {
  const l = v as Partial<LeaseSpec> | null;
  return (
    l !== null &&
    typeof l === 'object' &&
    l.leaseId === leaseId &&
    typeof l.namespace === 'string' &&
    typeof l.leaseUser === 'string' &&
    Array.isArray(l.nodes) &&
    l.nodes.every(
      (n: unknown) =>
        typeof (n as { hostname?: unknown } | null)?.hostname === 'string' &&
        typeof (n as { sshUser?: unknown }).sshUser === 'string',
    ) &&
    typeof l.gpuCount === 'number' &&
    typeof l.startMs === 'number' &&
    typeof l.endMs === 'number' &&
    Array.isArray(l.sshPublicKeys)
  );
}
