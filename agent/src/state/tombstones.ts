// Leases this agent revoked (or was told to), remembered on disk until the
// lease's end: JetStream does not keep order on redelivery, so a revoke can
// overtake its provision, and a reconciliation can act on a lease list read
// before the revoke. Neither may bring the lease back (D30). A tombstone
// that cannot be read is kept and logged, and its lease counts as revoked:
// it is never provisioned, whatever the file once said.

import { join } from 'node:path';

import { HOUR_MS, MAX_DURATION_HOURS } from '@gpux/shared';

import type { Logger } from '../logger.js';
import { LeaseRecords } from './lease-records.js';

export interface Tombstone {
  /** Forgotten after this (the lease's end, exchange clock). */
  readonly untilMs: number;
  readonly reason: string;
  /** ReportRevoked was answered: a revoke delivered again has nothing left to do. */
  readonly reported: boolean;
}

function parse(raw: unknown): Tombstone | undefined {
  const r = raw as Partial<Tombstone> | undefined;
  if (typeof r?.untilMs !== 'number' || typeof r.reason !== 'string') return undefined;
  return { untilMs: r.untilMs, reason: r.reason, reported: r.reported === true };
}

/**
 * How long to remember a revoked lease whose end is not known (its revoke
 * came first): no lease outlives its start by more than the longest
 * duration, and it started before it was revoked.
 */
export function tombstoneUntil(endMs: number | undefined, revokedAtMs: number): number {
  return endMs ?? revokedAtMs + MAX_DURATION_HOURS * HOUR_MS;
}

export class Tombstones {
  private readonly records: LeaseRecords<Tombstone>;

  constructor(stateDir: string, logger: Logger) {
    this.records = new LeaseRecords({
      dir: join(stateDir, 'revoked'),
      parse,
      what: 'tombstone',
      unreadableMeans: 'its lease counts as revoked and is never provisioned here',
      logger,
    });
  }

  load(): Promise<void> {
    return this.records.load();
  }

  /** Revoked here: a tombstone, readable or not (D30). */
  has(leaseId: string): boolean {
    return this.records.get(leaseId) !== undefined || this.records.isUnreadable(leaseId);
  }

  /** The tombstone as read; undefined for none, and for one that cannot be read (has() is true). */
  get(leaseId: string): Tombstone | undefined {
    return this.records.get(leaseId);
  }

  async add(leaseId: string, untilMs: number, reason: string): Promise<void> {
    const known = this.records.get(leaseId);
    if (known !== undefined && known.untilMs <= untilMs) return;
    await this.records.set(leaseId, {
      untilMs,
      reason: known?.reason ?? reason,
      reported: known?.reported ?? false,
    });
  }

  async markReported(leaseId: string): Promise<void> {
    const known = this.records.get(leaseId);
    if (known === undefined || known.reported) return;
    await this.records.set(leaseId, { ...known, reported: true });
  }

  /** Drops the tombstones of leases that have ended (an unreadable one has no end: it stays). */
  async prune(nowMs: number): Promise<number> {
    const over = this.records.entries().filter(([, t]) => t.untilMs < nowMs);
    for (const [leaseId] of over) await this.records.delete(leaseId);
    return over.length;
  }

  get size(): number {
    return this.records.entries().length;
  }
}
