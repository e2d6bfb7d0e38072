// Events the exchange publishes (outbox → NATS JetStream, or the in-process
// bus when NATS_URL is unset) and the agent of a provider cluster consumes
// (docs/architecture.md flows 2 and 3, D29). One subject per cluster and kind, so
// each agent's consumer filters on its own cluster with ONE filter subject
// (the NATS 2.9 servers here refuse several), and its NATS credentials can
// allow exactly that (deploy/nats/). Payloads are JSON; each carries its own
// event_id, which is also the JetStream message id (a replay is deduplicated
// within the stream's duplicate window).

export const EVENT_STREAM = 'GPUX_EVENTS';

/** The first token of every event subject. */
export const SUBJECT_ROOT = 'gpux';

export const SUBJECTS = {
  /** A lease was filled (or its resale transferred): provision namespace, credentials, SSH. */
  leaseProvision: (clusterId: string): string =>
    `${SUBJECT_ROOT}.cluster.${clusterId}.lease.provision`,
  /** A lease ended (terminated, expired, failed, resold): revoke every access. */
  leaseRevoke: (clusterId: string): string => `${SUBJECT_ROOT}.cluster.${clusterId}.lease.revoke`,
  /** Every event of one cluster: its agent's consumer's one filter subject. */
  cluster: (clusterId: string): string => `${SUBJECT_ROOT}.cluster.${clusterId}.>`,
} as const;

/** The durable pull consumer of a cluster's agent (no '.', '*' or '>' in consumer names). */
export function agentConsumerName(clusterId: string): string {
  return `agent_${clusterId}`;
}

/** The agent's NATS inbox prefix: its credentials allow only replies under it. */
export function agentInboxPrefix(clusterId: string): string {
  return `_INBOX_${clusterId}`;
}

export interface LeaseNodeAccess {
  readonly hostname: string;
  /** The SSH user of this node's endpoint (sshUserOf). */
  readonly ssh_user: string;
}

export interface LeaseProvisionEvent {
  readonly kind: 'lease.provision';
  readonly event_id: string;
  readonly lease_id: string;
  readonly cluster_id: string;
  /** The buyer. */
  readonly account_id: string;
  readonly namespace: string;
  readonly lease_user: string;
  readonly nodes: readonly LeaseNodeAccess[];
  readonly gpu_count: number;
  readonly start_ms: number;
  readonly end_ms: number;
  /** A lease bought on the resale market takes over this lease's nodes (D27). */
  readonly source_lease_id: string | null;
  /**
   * The buyer's SSH public keys (OpenSSH lines) when the lease was filled
   * (D32): a provider's token cannot read a customer's keys.
   */
  readonly ssh_public_keys: readonly string[];
}

export interface LeaseRevokeEvent {
  readonly kind: 'lease.revoke';
  readonly event_id: string;
  readonly lease_id: string;
  readonly cluster_id: string;
  readonly namespace: string;
  readonly nodes: readonly string[];
  readonly reason: 'terminated' | 'expired' | 'failed' | 'resold';
  readonly at_ms: number;
}

export type LeaseEvent = LeaseProvisionEvent | LeaseRevokeEvent;

/**
 * D30: names are derived from the lease id, so every step can run twice.
 * Kubernetes names are lower-case DNS labels; ids are lower-case already.
 */
export function leaseNamespace(leaseId: string): string {
  return `gpux-${leaseId.replace(/_/g, '-')}`;
}

/** The lease's user name on the provider side (SSH, workspace): `lse-…`. */
export function leaseUser(leaseId: string): string {
  return leaseId.replace(/_/g, '-');
}

/** The SSH user of the k-th node (1-based) of a lease: `lse-…-k`. */
export function sshUserOf(leaseId: string, k: number): string {
  return `${leaseUser(leaseId)}-${k}`;
}
