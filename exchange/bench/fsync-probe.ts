// How the disk answers fdatasync while the bench runs. Every commit of the
// exchange waits for PostgreSQL's WAL flush, so a slow fdatasync stops every
// book at once; on a shared VM that, not CPU, can decide p99 (a 60 ms flush
// at 1,000 orders/s delays a hundred requests). The probe rewrites 8 KiB at
// the start of a file of its own and calls fdatasync, every `intervalMs`,
// and reports the latencies of those calls, so each phase of the http bench
// says what the disk did meanwhile (docs/benchmarks.md). Put the file on the
// filesystem PostgreSQL writes its WAL to (BENCH_FSYNC_DIR).

import { mkdtemp, open, rm } from 'node:fs/promises';
import type { FileHandle } from 'node:fs/promises';
import { join } from 'node:path';

import { summarize } from './stats.js';
import type { LatencySummary } from './stats.js';

const BLOCK = Buffer.alloc(8192, 0x78);

export class FsyncProbe {
  private readonly samplesNs: number[] = [];
  private running: Promise<void> | undefined;
  private stopping = false;
  /** Why the probe stopped early (a bad BENCH_FSYNC_DIR, a full disk); rethrown by stop(). */
  private failure: { error: unknown } | undefined;

  constructor(
    private readonly dir: string,
    private readonly intervalMs = 20,
  ) {}

  start(): void {
    // Caught here, so a failing probe cannot end the process before stop().
    this.running ??= this.loop().catch((error: unknown) => {
      this.failure = { error };
    });
  }

  /** Stops the probe and removes its file; the latencies of its calls so far. */
  async stop(): Promise<LatencySummary> {
    this.stopping = true;
    await this.running;
    if (this.failure !== undefined) throw this.failure.error;
    return summarize(Float64Array.from(this.samplesNs));
  }

  private async loop(): Promise<void> {
    const dir = await mkdtemp(join(this.dir, 'gpux-fsync-probe-'));
    let file: FileHandle | undefined;
    try {
      file = await open(join(dir, 'probe'), 'w');
      while (!this.stopping) {
        const t0 = process.hrtime.bigint();
        await file.write(BLOCK, 0, BLOCK.length, 0);
        await file.datasync();
        this.samplesNs.push(Number(process.hrtime.bigint() - t0));
        await new Promise((r) => setTimeout(r, this.intervalMs));
      }
    } finally {
      await file?.close();
      await rm(dir, { recursive: true, force: true });
    }
  }
}
