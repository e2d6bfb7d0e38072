// What the exchange's side of the agent protocol (D29) works with, and the
// checks every call makes: the provider's token, its cluster, its input.

import { status } from '@grpc/grpc-js';
import type { GpuType, Zone } from '@gpux/shared';

import type { Principal } from '../accounts/accounts.js';
import type { Database } from '../db/database.js';
import type { EventPublisher } from '../events/publisher.js';
import type { SecretBox } from '../leases/secret-box.js';
import type { Logger } from '../logger.js';
import type { Market } from '../market/market.js';
import type { ClusterLookup } from '../orders/intake.js';
import type { KnownCluster } from './agent-clusters.js';
import { MAX_ID_BYTES } from './agent-limits.js';
import { runtimeOf } from './agent-runtime.js';

export interface ProviderContext {
  readonly db: Database;
  readonly market: Market;
  /** Principals of tokens and providers' clusters (accounts/directory.ts). */
  readonly directory: ClusterLookup & { principal(token: string): Promise<Principal | undefined> };
  readonly publisher: EventPublisher;
  readonly secrets: SecretBox;
  readonly logger: Logger;
  /**
   * Does this process own the market now (docs/ownership.md)? A standby
   * answers every call UNAVAILABLE. Unset: always (tests).
   */
  readonly serving?: () => boolean;
  /** Durations as the exchange sees them (metrics/exchange-metrics.ts); unset: not measured. */
  readonly observe?: LeaseObserver;
}

/** A lease's provisioning (start to ready) and revocation (end to confirmed), in seconds. */
export interface LeaseObserver {
  provisioned(seconds: number): void;
  revoked(seconds: number): void;
}

/** A call the exchange answers with a gRPC status other than OK. */
export class AgentCallError extends Error {
  override readonly name = 'AgentCallError';

  constructor(
    readonly code: status,
    message: string,
    /** RESOURCE_EXHAUSTED past a provider's share: how long to wait (agent-share.ts). */
    readonly retryAfterMs?: number,
  ) {
    super(message);
  }
}

export const invalid = (message: string): AgentCallError =>
  new AgentCallError(status.INVALID_ARGUMENT, message);

/** A lease or order the agent names that its cluster does not have: NOT_FOUND, never re-sent as is. */
export const notFound = (message: string): AgentCallError =>
  new AgentCallError(status.NOT_FOUND, message);

export interface ClusterRow {
  readonly id: string;
  readonly provider_account_id: string;
  readonly gpu_type: GpuType;
  readonly zone: Zone;
  readonly heartbeat_ms: number | null;
}

const ID = new RegExp(`^[a-z]{3}_[0-9a-z]{1,${MAX_ID_BYTES - 4}}$`);

export function checkId(value: string, field: string): string {
  if (!ID.test(value))
    throw invalid(
      `${field} must be an id like cls_… (at most ${MAX_ID_BYTES} bytes), got "${value.slice(0, 80)}"`,
    );
  return value;
}

/**
 * The caller's cluster: NOT_FOUND when there is none, PERMISSION_DENIED when
 * it is another provider's (the provider's token may not act on it).
 */
export async function ownCluster(
  ctx: Pick<ProviderContext, 'db'>,
  caller: Principal,
  clusterId: string,
): Promise<ClusterRow> {
  return (await ownKnownCluster(ctx, caller, clusterId)).row;
}

/** ownCluster with its nodes, as the agents' service keeps them (agent-clusters.ts). */
export async function ownKnownCluster(
  ctx: Pick<ProviderContext, 'db'>,
  caller: Principal,
  clusterId: string,
): Promise<KnownCluster> {
  checkId(clusterId, 'cluster_id');
  const known = await runtimeOf(ctx).clusters.get(clusterId);
  if (known === undefined) throw new AgentCallError(status.NOT_FOUND, `no cluster ${clusterId}`);
  if (known.row.provider_account_id !== caller.accountId) {
    throw new AgentCallError(
      status.PERMISSION_DENIED,
      `cluster ${clusterId} is not this provider's`,
    );
  }
  return known;
}
