// Every piece of work on a lease goes through one queue keyed by the lease
// id (work-queue.ts): a provision or revoke event, the reconciler's plan, a
// token due for refresh, and the retry of any of them that failed (an
// unreachable exchange, a busy cluster API). So at most one worker touches
// a lease at a time, duplicates merge instead of running twice, and one
// retry policy (RETRY_POLICY) paces every retry.

import { ExchangeError } from '../exchange/exchange-client.js';
import type { Logger } from '../logger.js';
import type { LeaseSpec } from '../provisioner/lease-spec.js';
import type { LeaseWorker, Provisioned, ProvisionOutcome, RevokeWhy } from './lease-worker.js';
import { WorkQueue } from './work-queue.js';
import type { Attempt, RetryPolicy } from './work-queue.js';

/** What is asked of one lease. */
export type LeaseWork =
  /** `force`: report even if reported before (the exchange lost it). */
  | { readonly kind: 'provision'; readonly lease: LeaseSpec; readonly force: boolean }
  | { readonly kind: 'revoke'; readonly why: RevokeWhy }
  /** The exchange shows it active: remember it was reported, send nothing. */
  | { readonly kind: 'mark-reported' };

export type LeaseWorkDone =
  | ({ readonly kind: 'provision' } & Provisioned)
  | { readonly kind: 'revoke' }
  | { readonly kind: 'mark-reported' };

/**
 * Two pieces of work on one lease as one. A revocation wins over anything
 * (D30: once revoked, nothing provisions it); two provisions are one, forced
 * if either was; a provision covers marking it reported (it reports only
 * what was not answered for).
 */
export function mergeLeaseWork(waiting: LeaseWork, added: LeaseWork): LeaseWork {
  if (waiting.kind === 'revoke') {
    if (added.kind !== 'revoke') return waiting;
    return {
      kind: 'revoke',
      why: {
        reason: waiting.why.reason,
        atMs: Math.min(waiting.why.atMs, added.why.atMs),
        endMs: waiting.why.endMs ?? added.why.endMs,
      },
    };
  }
  if (added.kind === 'revoke') return added;
  if (waiting.kind === 'provision' && added.kind === 'provision') {
    return { kind: 'provision', lease: added.lease, force: waiting.force || added.force };
  }
  return waiting.kind === 'provision' ? waiting : added;
}

export interface LeaseQueueOptions {
  readonly worker: LeaseWorker;
  readonly logger: Logger;
  readonly maxConcurrent?: number;
  readonly retry?: RetryPolicy;
}

export class LeaseQueue {
  private readonly queue: WorkQueue<LeaseWork, LeaseWorkDone>;

  constructor(private readonly o: LeaseQueueOptions) {
    this.queue = new WorkQueue<LeaseWork, LeaseWorkDone>({
      run: (leaseId, work, signal) => this.run(leaseId, work, signal),
      merge: mergeLeaseWork,
      // D26: access goes within seconds, whatever failed before.
      urgent: (work) => work.kind === 'revoke',
      // D28: a token that ends before the lease is refreshed in time.
      again: (_leaseId, work, done) =>
        done.kind === 'provision' && work.kind === 'provision' && done.refreshAtMs !== undefined
          ? { atMs: done.refreshAtMs, work: { kind: 'provision', lease: work.lease, force: false } }
          : undefined,
      retryAfterMs: (err) => (err instanceof ExchangeError ? err.retryAfterMs : undefined),
      onRetry: (leaseId, err, retryInMs, failures) => {
        o.logger.warn({ leaseId, err, retryInMs, failures }, 'lease work failed; trying again');
      },
      ...(o.maxConcurrent === undefined ? {} : { maxConcurrent: o.maxConcurrent }),
      ...(o.retry === undefined ? {} : { retry: o.retry }),
    });
  }

  /** Provisions (and reports) the lease; resolves once done. */
  async provision(lease: LeaseSpec, force = false): Promise<ProvisionOutcome> {
    const done = await this.queue.add(lease.leaseId, { kind: 'provision', lease, force });
    return done.kind === 'provision' ? done.outcome : 'revoked';
  }

  /** Revokes the lease; a provisioning under way stops at once. Resolves once done. */
  async revoke(leaseId: string, why: RevokeWhy): Promise<void> {
    this.o.worker.preempt(leaseId);
    await this.queue.add(leaseId, { kind: 'revoke', why });
  }

  /** The reconciler's way: resolves after the first try, done or failed (retried by the queue). */
  attempt(leaseId: string, work: LeaseWork): Promise<Attempt<LeaseWorkDone>> {
    if (work.kind === 'revoke') this.o.worker.preempt(leaseId);
    return this.queue.attempt(leaseId, work);
  }

  /** Provisions the lease again at `atMs` (its token is due for refresh, D28). */
  refreshAt(lease: LeaseSpec, atMs: number): void {
    this.queue.addAt(lease.leaseId, { kind: 'provision', lease, force: false }, atMs);
  }

  /** Leases with work waiting, under way, or waiting out a retry's backoff. */
  get size(): { readonly queued: number; readonly running: number; readonly retrying: number } {
    return this.queue.size;
  }

  /** Stops taking work; work under way gets until the deadline (the rest waits for the next start). */
  drain(deadlineMs: number): Promise<{ readonly unfinished: number }> {
    return this.queue.drain(deadlineMs);
  }

  private async run(leaseId: string, work: LeaseWork, signal: AbortSignal): Promise<LeaseWorkDone> {
    switch (work.kind) {
      case 'provision':
        return {
          kind: 'provision',
          ...(await this.o.worker.provision(work.lease, { force: work.force, signal })),
        };
      case 'revoke':
        await this.o.worker.revoke(leaseId, work.why);
        // Its token's refresh, if one was due, is not needed any more.
        this.queue.cancelLater(leaseId);
        return { kind: 'revoke' };
      case 'mark-reported':
        await this.o.worker.markReported(leaseId);
        return { kind: 'mark-reported' };
    }
  }
}
