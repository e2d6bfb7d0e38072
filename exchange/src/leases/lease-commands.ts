// Terminating and reselling a lease (D26, D27): a live lease of the caller,
// then its book's single writer. Routes turn the outcomes into views.

import type { Principal } from '../accounts/accounts.js';
import type { Queryable } from '../db/database.js';
import type { ResellOutcome, TerminateOutcome } from '../market/book-state.js';
import type { AfterCommand } from '../market/book-writer.js';
import type { Market } from '../market/market.js';
import { leaseOf } from '../market/queries.js';
import { refuse } from '../market/refusal.js';
import type { Refusal } from '../market/refusal.js';
import type { LeaseRow } from '../market/rows.js';
import type { ResaleRequest } from './resale.js';

export interface LeaseContext {
  readonly db: Queryable;
  readonly market: Market;
}

/** A lease of the caller that is still live, else not_found or lease_not_active (D26). */
export async function liveLeaseOf(
  db: Queryable,
  accountId: string,
  leaseId: string,
): Promise<LeaseRow | Refusal> {
  const lease = await leaseOf(db, accountId, leaseId);
  if (lease === undefined) return refuse('not_found', `no lease ${leaseId}`);
  if (lease.status !== 'active' && lease.status !== 'provisioning') {
    return refuse('lease_not_active', `lease ${leaseId} is no longer active`);
  }
  return lease;
}

function isRefusal(x: LeaseRow | Refusal): x is Refusal {
  return 'ok' in x;
}

/** D26: DELETE /v1/leases/{id}. */
export async function terminateLease(
  { db, market }: LeaseContext,
  accountId: string,
  leaseId: string,
  after?: AfterCommand<TerminateOutcome>,
): Promise<TerminateOutcome> {
  const lease = await liveLeaseOf(db, accountId, leaseId);
  if (isRefusal(lease)) return lease;
  return market.writer(lease.gpu_type, lease.zone).submit((state, changes) => {
    const outcome = state.terminate(lease.id, accountId, market.clock.now(), changes);
    after?.(outcome, changes);
    return outcome;
  });
}

/** D27: POST /v1/leases/{id}/resell. */
export async function resellLease(
  { db, market }: LeaseContext,
  caller: Principal,
  leaseId: string,
  request: Omit<ResaleRequest, 'accountId' | 'organizationId'>,
  after?: AfterCommand<ResellOutcome>,
): Promise<ResellOutcome> {
  const lease = await liveLeaseOf(db, caller.accountId, leaseId);
  if (isRefusal(lease)) return lease;
  const r: ResaleRequest = {
    ...request,
    accountId: caller.accountId,
    organizationId: caller.organizationId,
  };
  return market.writer(lease.gpu_type, lease.zone).submit((state, changes) => {
    // Suspended after its request was let in: refused by the writer (Market.isSuspended).
    const outcome = market.isSuspended(caller.accountId)
      ? refuse('account_suspended', `account ${caller.accountId} is suspended`)
      : state.resell(lease.id, r, market.clock.now(), changes);
    after?.(outcome, changes);
    return outcome;
  });
}
