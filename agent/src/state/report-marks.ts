// Leases whose ReportProvisioned the exchange took: a provision delivered
// again for one of them needs nothing, not even a report (issue 12:
// ReportProvisioned once). A crash between the report and this mark is
// harmless: the redelivered event reports the same access again.

import { join } from 'node:path';

import type { Logger } from '../logger.js';
import { LeaseRecords } from './lease-records.js';

export interface ReportMark {
  /** The agent's clock when the exchange answered. */
  readonly atMs: number;
}

function parse(raw: unknown): ReportMark | undefined {
  const r = raw as Partial<ReportMark> | undefined;
  return typeof r?.atMs === 'number' ? { atMs: r.atMs } : undefined;
}

export class ReportMarks {
  private readonly records: LeaseRecords<ReportMark>;

  constructor(stateDir: string, logger: Logger) {
    this.records = new LeaseRecords({
      dir: join(stateDir, 'reported'),
      parse,
      what: 'report mark',
      unreadableMeans: "its lease's access is reported again",
      logger,
    });
  }

  load(): Promise<void> {
    return this.records.load();
  }

  get(leaseId: string): ReportMark | undefined {
    return this.records.get(leaseId);
  }

  set(leaseId: string, atMs: number): Promise<void> {
    return this.records.set(leaseId, { atMs });
  }

  delete(leaseId: string): Promise<void> {
    return this.records.delete(leaseId);
  }

  leaseIds(): string[] {
    return this.records.entries().map(([id]) => id);
  }
}
