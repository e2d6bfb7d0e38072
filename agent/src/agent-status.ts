// What the agent is doing, for `gpux start` (AgentHandle.status()) and for
// operators and scripts (<stateDir>/status.json, rewritten every heartbeat
// interval and after each reconciliation).

import type { ProvisionerKind } from './config.js';
import type { ExchangePacingStatus } from './exchange/paced-exchange.js';
import type { ReconcileResult } from './leases/reconciler.js';
import type { SellerStatus } from './selling/seller.js';

export type AgentPhase = 'attaching' | 'running' | 'draining' | 'stopped' | 'failed';

export interface AgentStatus {
  readonly phase: AgentPhase;
  readonly clusterId: string;
  readonly provisioner: ProvisionerKind;
  /** Why the agent stopped by itself (phase failed). */
  readonly fatal: string | undefined;
  readonly lastHeartbeat:
    | {
        readonly atMs: number;
        readonly ok: boolean;
        readonly error?: string;
        /** Which step failed: reading the nodes' health (the provisioner), or the call. */
        readonly failed?: 'provisioner' | 'exchange';
      }
    | undefined;
  /** The cluster's nodes as the last heartbeat answer showed them. */
  readonly nodes: readonly { hostname: string; status: string; leaseId: string }[];
  /** askCents null: GPUX_ASK_PRICE unset, the cluster's sells are withdrawn. */
  readonly selling: SellerStatus | undefined;
  /** Calls held back at the exchange's request, and requests it refused as is (not sent again). */
  readonly exchange: ExchangePacingStatus;
  readonly lastReconcile: ReconcileResult | undefined;
  /** Leases with SSH endpoints here (provisioning or provisioned). */
  readonly leases: number;
  /** Events being handled (acked once their lease's work is done, D29). */
  readonly eventsInFlight: number;
  /** Leases with work waiting, under way, or waiting out a retry's backoff (the lease queue). */
  readonly leaseWork: {
    readonly queued: number;
    readonly running: number;
    readonly retrying: number;
  };
  readonly ssh: {
    readonly address: string;
    readonly hostKeyFingerprint: string | undefined;
  };
}
