// One small JSON file per lease in a directory of the state directory, all
// kept in memory too: the agent's own memory of leases across restarts.
// A file that cannot be read back is never deleted here: it is logged, kept
// on disk and listed as unreadable, and what it stood for decides what that
// means (an unreadable tombstone still means revoked, tombstones.ts).

import { mkdir, readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';

import { isId } from '@gpux/shared';

import type { Logger } from '../logger.js';
import { UnreadableRecordError, readJsonFile, writeFileAtomic } from './atomic-file.js';

export interface LeaseRecordsOptions<T> {
  readonly dir: string;
  /** The record read back, or undefined when the content is not one. */
  readonly parse: (raw: unknown) => T | undefined;
  /** What the records are, for the log ("tombstone", "report mark"). */
  readonly what: string;
  /** What an unreadable record means for its lease, for the log. */
  readonly unreadableMeans: string;
  readonly logger: Logger;
}

export class LeaseRecords<T> {
  private readonly records = new Map<string, T>();
  /** Lease ids whose file is there but could not be read, and why. */
  private readonly broken = new Map<string, unknown>();

  constructor(private readonly o: LeaseRecordsOptions<T>) {}

  async load(): Promise<void> {
    await mkdir(this.o.dir, { recursive: true, mode: 0o700 });
    for (const name of await readdir(this.o.dir)) {
      const leaseId = name.replace(/\.json$/, '');
      if (!name.endsWith('.json') || !isId('lse_', leaseId)) continue;
      const path = join(this.o.dir, name);
      try {
        const record = this.o.parse(await readJsonFile(path));
        if (record === undefined)
          throw new UnreadableRecordError(`${path} is not a ${this.o.what}`);
        this.records.set(leaseId, record);
      } catch (err) {
        // Named kinds only: not JSON, not a record, or not readable (EACCES, EIO, EISDIR…).
        if (
          !(err instanceof SyntaxError || err instanceof UnreadableRecordError) &&
          typeof (err as NodeJS.ErrnoException | null)?.code !== 'string'
        ) {
          throw err;
        }
        this.broken.set(leaseId, err);
        this.o.logger.error(
          { leaseId, path, err },
          `unreadable ${this.o.what} kept: ${this.o.unreadableMeans}; repair or remove the file`,
        );
      }
    }
  }

  get(leaseId: string): T | undefined {
    return this.records.get(leaseId);
  }

  /** Its file is there but could not be read at load (kept as it is until set or deleted). */
  isUnreadable(leaseId: string): boolean {
    return this.broken.has(leaseId);
  }

  entries(): [string, T][] {
    return [...this.records];
  }

  /** Written to disk before it counts, so a crash right after cannot lose it. */
  async set(leaseId: string, record: T): Promise<void> {
    await writeFileAtomic(join(this.o.dir, `${leaseId}.json`), JSON.stringify(record));
    this.records.set(leaseId, record);
    this.broken.delete(leaseId);
  }

  async delete(leaseId: string): Promise<void> {
    this.records.delete(leaseId);
    this.broken.delete(leaseId);
    await rm(join(this.o.dir, `${leaseId}.json`), { force: true });
  }
}
