// Events the exchange publishes (outbox → NATS JetStream) and the agent of a
// provider cluster consumes (architecture.md flows 2 and 3, D29). Subjects
// carry the cluster id so each agent subscribes to its own cluster only.

export const EVENT_STREAM = 'GPUX_EVENTS';

export const SUBJECTS = {
  /** A lease was created by a fill: provision namespace, credentials, SSH. */
  leaseProvision: (clusterId: string): string => `gpux.lease.provision.${clusterId}`,
  /** A lease ended (terminated, expired, failed, resold): revoke every access. */
  leaseRevoke: (clusterId: string): string => `gpux.lease.revoke.${clusterId}`,
} as const;

export interface LeaseProvisionEvent {
  readonly event_id: string;
  readonly lease_id: string;
  readonly cluster_id: string;
  readonly account_id: string;
  readonly namespace: string;
  readonly nodes: readonly string[];
  readonly gpu_count: number;
  readonly start_ms: number;
  readonly end_ms: number;
  /** A lease bought on the resale market takes over this lease's nodes (D27). */
  readonly source_lease_id: string | null;
}

export interface LeaseRevokeEvent {
  readonly event_id: string;
  readonly lease_id: string;
  readonly cluster_id: string;
  readonly namespace: string;
  readonly nodes: readonly string[];
  readonly reason: 'terminated' | 'expired' | 'failed' | 'resold';
  readonly at_ms: number;
}

/**
 * D30: names are derived from the lease id, so every step can run twice.
 * Kubernetes names are lower-case DNS labels; ids are lower-case already.
 */
export function leaseNamespace(leaseId: string): string {
  return `gpux-${leaseId.replace(/_/g, '-')}`;
}
