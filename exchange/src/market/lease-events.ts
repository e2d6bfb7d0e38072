// The events a book writes to the outbox for the provider's agent
// (docs/architecture.md flows 2 and 3, D29): one per lease to provision, one per
// lease whose access must go. Typed with the shared event types, each with
// its own event_id (the JetStream message id, so a replay is deduplicated).

import { SUBJECTS, leaseNamespace, leaseUser, newId, sshUserOf } from '@gpux/shared';
import type { LeaseRevokeEvent } from '@gpux/shared';

import type { LeaseNodeRow, LeaseRow, OutboxRow, StoredProvisionEvent } from './rows.js';

/**
 * The buyer's SSH keys are not in the stored event: the same write batch
 * copies them into lease_keys (change-set.ts), and the relay adds them when
 * it publishes (events/outbox-relay.ts), so the snapshot is the keys of the
 * moment of the fill (D32).
 */
/**
 * A lease's nodes in their one order (by hostname): the k-th has the SSH user
 * `…-k` in the event, in ListLeases (providers/provider-leases.ts) and in the
 * lease read alike.
 */
export function byHostname<T extends { hostname: string }>(nodes: readonly T[]): T[] {
  return [...nodes].sort((a, b) =>
    a.hostname < b.hostname ? -1 : a.hostname > b.hostname ? 1 : 0,
  );
}

export function provisionEvent(lease: LeaseRow, nodes: readonly LeaseNodeRow[]): OutboxRow {
  const event: StoredProvisionEvent = {
    kind: 'lease.provision',
    event_id: newId('evt_'),
    lease_id: lease.id,
    cluster_id: lease.cluster_id,
    account_id: lease.account_id,
    namespace: leaseNamespace(lease.id),
    lease_user: leaseUser(lease.id),
    nodes: byHostname(nodes).map((n, i) => ({
      hostname: n.hostname,
      ssh_user: sshUserOf(lease.id, i + 1),
    })),
    gpu_count: lease.gpu_count,
    start_ms: lease.start_ms,
    end_ms: lease.end_ms,
    source_lease_id: lease.source_lease_id,
  };
  return {
    event_id: event.event_id,
    subject: SUBJECTS.leaseProvision(lease.cluster_id),
    payload: event,
    created_ms: lease.start_ms,
  };
}

export function revokeEvent(
  lease: LeaseRow,
  nodes: readonly LeaseNodeRow[],
  reason: LeaseRevokeEvent['reason'],
  at: number,
): OutboxRow {
  const event: LeaseRevokeEvent = {
    kind: 'lease.revoke',
    event_id: newId('evt_'),
    lease_id: lease.id,
    cluster_id: lease.cluster_id,
    namespace: leaseNamespace(lease.id),
    nodes: nodes.map((n) => n.hostname),
    reason,
    at_ms: at,
  };
  return {
    event_id: event.event_id,
    subject: SUBJECTS.leaseRevoke(lease.cluster_id),
    payload: event,
    created_ms: at,
  };
}
