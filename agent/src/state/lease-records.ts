// One small JSON file per lease in a directory of the state directory, all
// kept in memory too: the agent's own memory of leases across restarts.

import { mkdir, readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';

import { isId } from '@gpux/shared';

import { readJsonFile, writeFileAtomic } from './atomic-file.js';

export class LeaseRecords<T> {
  private readonly records = new Map<string, T>();

  constructor(
    private readonly dir: string,
    /** The record read back, or undefined when it is not one (it is then dropped). */
    private readonly parse: (raw: unknown) => T | undefined,
  ) {}

  async load(): Promise<void> {
    await mkdir(this.dir, { recursive: true, mode: 0o700 });
    for (const name of await readdir(this.dir)) {
      const leaseId = name.replace(/\.json$/, '');
      if (!name.endsWith('.json') || !isId('lse_', leaseId)) continue;
      let record: T | undefined;
      try {
        record = this.parse(await readJsonFile(join(this.dir, name)));
      } catch {
        record = undefined;
      }
      if (record === undefined) await rm(join(this.dir, name), { force: true });
      else this.records.set(leaseId, record);
    }
  }

  get(leaseId: string): T | undefined {
    return this.records.get(leaseId);
  }

  entries(): [string, T][] {
    return [...this.records];
  }

  /** Written to disk before it counts, so a crash right after cannot lose it. */
  async set(leaseId: string, record: T): Promise<void> {
    await writeFileAtomic(join(this.dir, `${leaseId}.json`), JSON.stringify(record));
    this.records.set(leaseId, record);
  }

  async delete(leaseId: string): Promise<void> {
    this.records.delete(leaseId);
    await rm(join(this.dir, `${leaseId}.json`), { force: true });
  }
}
