// npm run bench -- pg-replay FILE [--merge K] [--warmup N]
//
// Replays write batches captured from a running exchange (GPUX_CAPTURE_WRITES,
// market/capture.ts; e.g. during `npm run bench -- http`) on a fresh
// database with the current migrations, one statement after another on one
// connection, and prints the CPU time PostgreSQL's backend spent on them
// (from /proc, so PostgreSQL must run on this machine). Unlike latency under
// load, this figure repeats to within a few per cent, so it shows what a
// schema or statement change costs the database (docs/benchmarks.md).
//
// The peer run, in the same process: the same rows merged K batches to a
// statement (a row that one statement may touch only once kept in its last
// state: orders, leases, holds, nodes, halts, cordons, book sequences; the
// account events' queued arrays joined into one row), which shows the share
// of PostgreSQL's cost that is per statement.

import { readFileSync } from 'node:fs';

import pg from 'pg';

import { migrate } from '../src/db/migrate.js';
import { openPostgres } from '../src/db/postgres.js';
import { createDatabase, uniqueDatabaseName } from '../src/db/testing/admin-database.js';
import type { CapturedBatch } from '../src/market/capture.js';
import { BATCH_PARTS, writeBatchSql } from '../src/market/change-set.js';

const USAGE = 'usage: npm run bench -- pg-replay FILE [--merge K] [--warmup N]';

/**
 * The key of a row that a merged statement must hold once, by the table's
 * bit (PARTS in market/change-set.ts): an upsert or an UPDATE … FROM may
 * touch a row only once per statement. Tables not named here only insert
 * distinct rows, and their rows are joined as they are.
 */
const KEYS: Readonly<Record<number, (r: Record<string, unknown>) => unknown>> = {
  0: (r) => r['id'], // orders
  1: (r) => r['id'], // leases
  8: (r) => r['order_id'], // credit holds' new amounts
  10: (r) => r['id'], // nodes' status
  13: (r) => `${String(r['gpu_type'])}/${String(r['zone'])}`, // book halts
  14: (r) => r['id'], // cluster cordons
  15: (r) => `${String(r['gpu_type'])}/${String(r['zone'])}`, // book sequences
};

interface Batch {
  readonly mask: number;
  readonly params: readonly string[];
}

/** The table mask of a captured batch: its prepared name ends with it (`f`: fenced). */
export function maskOf(b: CapturedBatch): number {
  const m = /_f?(\d+)$/.exec(b.name);
  if (m === null) throw new Error(`not a write batch: ${b.name}`);
  return Number(m[1]);
}

/**
 * A captured batch's table parameters. A fenced batch's last parameter is
 * its fence (market/ownership.ts); the replay writes the tables unfenced, on
 * a scratch database that no owner holds.
 */
export function tableParams(b: CapturedBatch): readonly string[] {
  return /_f\d+$/.test(b.name) ? b.params.slice(0, -1) : b.params;
}

/**
 * `k` consecutive batches at a time as one: each table's rows joined, a row
 * of KEYS held once in its last state. The account events' part (the last)
 * is one queued row whose value is an array, so the arrays are joined too.
 */
export function mergeBatches(batches: readonly Batch[], k: number): Batch[] {
  const out: Batch[] = [];
  for (let i = 0; i < batches.length; i += k) {
    const tables: unknown[][] = Array.from({ length: BATCH_PARTS }, () => []);
    for (const b of batches.slice(i, i + k)) {
      let j = 0;
      for (let t = 0; t < BATCH_PARTS; t++) {
        if ((b.mask & (1 << t)) === 0) continue;
        tables[t]!.push(...(JSON.parse(b.params[j++] ?? '[]') as unknown[]));
      }
      if (j !== b.params.length)
        throw new Error(`a batch of mask ${b.mask} has ${b.params.length} parameters`);
    }
    for (const [t, key] of Object.entries(KEYS)) {
      const byKey = new Map<unknown, unknown>();
      for (const r of tables[Number(t)]!) byKey.set(key(r as Record<string, unknown>), r);
      tables[Number(t)] = [...byKey.values()];
    }
    let mask = 0;
    const params: string[] = [];
    tables.forEach((rows, t) => {
      if (rows.length === 0) return;
      mask |= 1 << t;
      params.push(JSON.stringify(rows));
    });
    if (mask !== 0) out.push({ mask, params });
  }
  return out;
}

function backendCpuMs(pid: number): number | undefined {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
    return (Number(fields[11]) + Number(fields[12])) * 10; // clock ticks of 10 ms
  } catch {
    return undefined;
  }
}

interface ReplayResult {
  readonly statements: number;
  readonly orders: number;
  readonly cpuMs: number | undefined;
  readonly wallMs: number;
}

async function replay(batches: readonly Batch[], warmup: number): Promise<ReplayResult> {
  const scratch = await createDatabase(uniqueDatabaseName('gpux_replay'));
  const url = scratch.url;
  try {
    const db = openPostgres(url, 1);
    await migrate(db);
    await db.close();
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      const pid = (await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!
        .pid;
      let cpu0: number | undefined;
      let t0 = performance.now();
      for (let i = 0; i < batches.length; i++) {
        if (i === warmup) {
          cpu0 = backendCpuMs(pid);
          t0 = performance.now();
        }
        const b = batches[i]!;
        await client.query({
          name: `gpux_write_batch_${b.mask}`,
          text: writeBatchSql(b.mask),
          values: [...b.params],
        });
      }
      const wallMs = performance.now() - t0;
      const cpu1 = backendCpuMs(pid);
      const orders = Number(
        (await client.query<{ n: string }>('SELECT COUNT(*) AS n FROM orders')).rows[0]!.n,
      );
      return {
        statements: batches.length - warmup,
        orders,
        cpuMs: cpu0 === undefined || cpu1 === undefined ? undefined : cpu1 - cpu0,
        wallMs,
      };
    } finally {
      await client.end();
    }
  } finally {
    await scratch.drop();
  }
}

export async function runPgReplay(argv: readonly string[]): Promise<void> {
  let file: string | undefined;
  let merge = 4;
  let warmupShare = 0.1;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i] ?? '';
    if (a === 'pg-replay') continue;
    if (a === '--merge') merge = Number(argv[++i]);
    else if (a === '--warmup') warmupShare = Number(argv[++i]);
    else if (!a.startsWith('--') && file === undefined) file = a;
    else throw new Error(`${USAGE}\nunknown argument ${a}`);
  }
  if (file === undefined || !Number.isInteger(merge) || merge < 1) throw new Error(USAGE);
  if (!(warmupShare >= 0 && warmupShare < 1))
    throw new Error(`${USAGE}\n--warmup: a share in [0, 1)`);
  const captured = readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as CapturedBatch);
  const batches = captured.map((b) => ({ mask: maskOf(b), params: tableParams(b) }));
  const merged = mergeBatches(batches, merge);
  console.log(
    `bench pg-replay: ${file}: ${batches.length} batches; the first ${Math.round(warmupShare * 100)} % of each run warm up unmeasured`,
  );
  // Orders measured: about the share of the batches after the warm-up.
  const per = (r: ReplayResult): string =>
    r.cpuMs === undefined
      ? `wall ${r.wallMs.toFixed(0)} ms (no /proc: backend CPU unknown)`
      : `backend CPU ${r.cpuMs} ms: ${((r.cpuMs * 1000) / r.statements).toFixed(0)} us per statement, ` +
        `~${((r.cpuMs * 1000) / (r.orders * (1 - warmupShare))).toFixed(0)} us per order; wall ${r.wallMs.toFixed(0)} ms`;
  const a = await replay(batches, Math.floor(batches.length * warmupShare));
  console.log(`  as captured   ${a.statements} statements, ${per(a)}`);
  const b = await replay(merged, Math.floor(merged.length * warmupShare));
  console.log(`  merged x${merge}     ${b.statements} statements, ${per(b)}`);
  if (a.cpuMs !== undefined && b.cpuMs !== undefined && b.cpuMs > 0) {
    console.log(
      `pg-replay: ${a.orders} orders; backend CPU as captured ${a.cpuMs} ms | merged x${merge} ${b.cpuMs} ms | ratio ${(a.cpuMs / b.cpuMs).toFixed(2)}x`,
    );
  }
}
