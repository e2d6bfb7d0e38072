// npm run bench -- restart [--open N] [--history N] [--runs R] [--starts S] [--keep]
//
// What a restart costs once the exchange has traded for a while: a database
// of its own on the local PostgreSQL, seeded with set-based SQL (a few
// seconds) with N open orders (default 100,000) spread over the twelve books
// on top of a history of closed orders (default 1,000,000), half of them
// filled in pairs (a fill and an expired lease each), plus live leases and
// the clusters their nodes belong to. Then:
//
// - `Market.open` (every book rebuilt from PostgreSQL, docs/architecture.md
//   flow 5) R times in this process, on a pool of its own each time;
// - the built exchange (`exchange/dist/main.js`, as `npm start` runs it) S
//   times, from spawn to its first ready answer (GET /readyz: it owns the
//   market and has rebuilt every book, docs/ownership.md).
//
// With --keep the database is left in place (its name is printed) to look at
// the start-up's plans; drop it by hand. Exits 1 when the median
// `Market.open` is over 2 s. Figures:
// docs/benchmarks.md, "Restart".

import { spawn } from 'node:child_process';
import os from 'node:os';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';

import { GPU_TYPES, ZONES } from '@gpux/shared';

import { migrate } from '../src/db/migrate.js';
import { openPostgres } from '../src/db/postgres.js';
import { createDatabase, uniqueDatabaseName } from '../src/db/testing/admin-database.js';
import type { ScratchDatabase } from '../src/db/testing/admin-database.js';
import { Market } from '../src/market/market.js';
import { EXCHANGE_NODE_FLAGS } from '../src/node-flags.js';
import { benchFail, parseCounts } from './bench-args.js';
import { buildExchange } from './http-exchange.js';

const USAGE = 'usage: npm run bench -- restart [--open N] [--history N] [--runs R] [--starts S]';
const MAIN = fileURLToPath(new URL('../dist/main.js', import.meta.url));
/** The target: a restart rebuilds every book within this. */
const LIMIT_MS = 2_000;

interface Options {
  readonly open: number;
  readonly history: number;
  readonly runs: number;
  readonly starts: number;
  readonly keep: boolean;
}

function fail(message: string, code = 1): never {
  benchFail('restart', message, code);
}

function parseArgs(argv: readonly string[]): Options {
  const o = parseCounts(
    'restart',
    argv,
    { open: 100_000, history: 1_000_000, runs: 5, starts: 3 },
    USAGE,
  );
  if (o.runs < 1) fail('--runs must be at least 1', 2);
  return o;
}

/** Clusters per book, and nodes per cluster: room for the open sells and the live leases. */
const CLUSTERS_PER_BOOK = 2;
const BUYERS = 200;
/** One open order in five is a sell of one node, the rest buys of 1-4 nodes. */
const SELL_EVERY = 5;

/**
 * The seed, as set-based SQL. Book b (0..11) is GPU_TYPES[b / 3] in
 * ZONES[b % 3]; provider k owns cluster k of book k / CLUSTERS_PER_BOOK.
 * Bids rest at $1.00-1.99, asks at $2.00-2.99, so no book crosses.
 */
function seedSql(o: Options, now: number): string {
  const books = GPU_TYPES.length * ZONES.length;
  const providers = books * CLUSTERS_PER_BOOK;
  const openSellsPerCluster = Math.ceil(o.open / SELL_EVERY / providers);
  const liveLeases = Math.max(books, Math.round(o.open / 12));
  const liveLeasesPerCluster = Math.ceil(liveLeases / providers);
  const nodesPerCluster = openSellsPerCluster + liveLeasesPerCluster;
  const fills = Math.floor(o.history / 2);
  const gpu = (b: string): string =>
    `((ARRAY['${GPU_TYPES.join("','")}'])[1 + (${b}) / ${ZONES.length}])::gpux_gpu_type`;
  const zone = (b: string): string =>
    `((ARRAY['${ZONES.join("','")}'])[1 + (${b}) % ${ZONES.length}])::gpux_zone`;
  const hour = 3_600_000;
  const day = 24 * hour;
  // History runs over the 30 days before the open orders were accepted.
  const t0 = now - 31 * day;
  const step = Math.max(1, Math.floor((30 * day) / Math.max(1, o.history)));
  return `
INSERT INTO organizations (id, name)
  SELECT 'org_p' || k, 'provider ' || k FROM generate_series(0::bigint, ${providers - 1}) k
  UNION ALL SELECT 'org_b' || k, 'buyer ' || k FROM generate_series(0::bigint, ${BUYERS - 1}) k;
INSERT INTO accounts (id, organization_id, name)
  SELECT 'acc_p' || k, 'org_p' || k, 'provider ' || k FROM generate_series(0::bigint, ${providers - 1}) k
  UNION ALL SELECT 'acc_b' || k, 'org_b' || k, 'buyer ' || k FROM generate_series(0::bigint, ${BUYERS - 1}) k;
INSERT INTO clusters (id, provider_account_id, gpu_type, zone)
  SELECT 'cls_' || k, 'acc_p' || k, ${gpu(`k / ${CLUSTERS_PER_BOOK}`)}::text,
         ${zone(`k / ${CLUSTERS_PER_BOOK}`)}::text
    FROM generate_series(0::bigint, ${providers - 1}) k;
INSERT INTO nodes (id, cluster_id, hostname, status)
  SELECT 'nod_' || k || '_' || j, 'cls_' || k, 'n' || j, 'online'
    FROM generate_series(0::bigint, ${providers - 1}) k, generate_series(0::bigint, ${nodesPerCluster - 1}) j;

-- History: order 2i buys from order 2i + 1 in book i % ${books}; both filled,
-- one fill and one lease (expired) per pair; the rest cancelled.
INSERT INTO orders (id, account_id, organization_id, side, order_type, gpu_type, zone,
    gpu_count, duration_hours, limit_price_cents, allow_partial, start_ms, cluster_id,
    status, filled_gpus, cancelled_gpus, cancel_reason, created_ms, filled_ms, cancelled_ms)
  SELECT 'ord_h' || n,
         CASE WHEN n % 2 = 0 THEN 'acc_b' || (n / 2) % ${BUYERS} ELSE 'acc_p' || c END,
         CASE WHEN n % 2 = 0 THEN 'org_b' || (n / 2) % ${BUYERS} ELSE 'org_p' || c END,
         (CASE WHEN n % 2 = 0 THEN 'buy' ELSE 'sell' END)::gpux_side,
         'limit'::gpux_order_type, ${gpu('b')}, ${zone('b')},
         8, CASE WHEN n % 2 = 0 THEN 4 ELSE 720 END, 200 + (n / 2) % 100, false,
         ${t0} + n * ${step}, CASE WHEN n % 2 = 1 THEN 'cls_' || c END,
         (CASE WHEN n < ${2 * fills} THEN 'filled' ELSE 'cancelled' END)::gpux_order_status,
         CASE WHEN n < ${2 * fills} THEN 8 ELSE 0 END, CASE WHEN n < ${2 * fills} THEN 0 ELSE 8 END,
         CASE WHEN n >= ${2 * fills} THEN 'user' END,
         ${t0} + n * ${step},
         CASE WHEN n < ${2 * fills} THEN ${t0} + n * ${step} END,
         CASE WHEN n >= ${2 * fills} THEN ${t0} + n * ${step} END
    FROM (SELECT n, (n / 2) % ${books} AS b,
                 ((n / 2) % ${books}) * ${CLUSTERS_PER_BOOK} + (n / 2 / ${books}) % ${CLUSTERS_PER_BOOK} AS c
            FROM generate_series(0::bigint, ${o.history - 1}) n) s;
INSERT INTO leases (id, account_id, organization_id, buy_order_id, seller_account_id, cluster_id,
    gpu_type, zone, gpu_count, hourly_cents, compute_cents, fee_cents, start_ms, end_ms,
    created_ms, status, ended_ms, end_reason, ready_ms)
  SELECT 'lse_h' || i, 'acc_b' || i % ${BUYERS}, 'org_b' || i % ${BUYERS}, 'ord_h' || 2 * i,
         'acc_p' || c, 'cls_' || c, ${gpu('b')}, ${zone('b')}, 8, 8 * (200 + i % 100),
         32 * (200 + i % 100), 3 * (200 + i % 100), ${t0} + 2 * i * ${step},
         ${t0} + 2 * i * ${step} + ${4 * hour}, ${t0} + 2 * i * ${step},
         'expired'::gpux_lease_status, ${t0} + 2 * i * ${step} + ${4 * hour}, 'expired',
         ${t0} + 2 * i * ${step}
    FROM (SELECT i, i % ${books} AS b,
                 (i % ${books}) * ${CLUSTERS_PER_BOOK} + (i / ${books}) % ${CLUSTERS_PER_BOOK} AS c
            FROM generate_series(0::bigint, ${fills - 1}) i) s;
INSERT INTO lease_nodes (lease_id, node_id, hostname)
  SELECT 'lse_h' || i, 'nod_' || c || '_' || j, 'n' || j
    FROM (SELECT i, (i % ${books}) * ${CLUSTERS_PER_BOOK} + (i / ${books}) % ${CLUSTERS_PER_BOOK} AS c,
                 i % ${nodesPerCluster} AS j
            FROM generate_series(0::bigint, ${fills - 1}) i) s;
-- book_seq counts the fills of each book in time order.
INSERT INTO fills (id, gpu_type, zone, buy_order_id, sell_order_id, lease_id, gpus, price_cents,
    hours, at_ms, book_seq)
  SELECT 'trd_h' || i, ${gpu('i % ' + books)}, ${zone('i % ' + books)}, 'ord_h' || 2 * i,
         'ord_h' || 2 * i + 1, 'lse_h' || i, 8, 200 + i % 100, 4, ${t0} + 2 * i * ${step},
         i / ${books} + 1
    FROM generate_series(0::bigint, ${fills - 1}) i;

-- Live leases: one node each, the last nodes of each cluster.
INSERT INTO leases (id, account_id, organization_id, buy_order_id, seller_account_id, cluster_id,
    gpu_type, zone, gpu_count, hourly_cents, compute_cents, fee_cents, start_ms, end_ms,
    created_ms, status, ready_ms)
  SELECT 'lse_l' || i, 'acc_b' || i % ${BUYERS}, 'org_b' || i % ${BUYERS}, 'ord_h0',
         'acc_p' || c, 'cls_' || c, ${gpu('b')}, ${zone('b')}, 8, 1600, 1600 * 24, 1600 * 24 / 10,
         ${now - hour}, ${now + 23 * hour}, ${now - hour}, 'active'::gpux_lease_status, ${now - hour}
    FROM (SELECT i, i % ${books} AS b,
                 (i % ${books}) * ${CLUSTERS_PER_BOOK} + (i / ${books}) % ${CLUSTERS_PER_BOOK} AS c
            FROM generate_series(0::bigint, ${liveLeases - 1}) i) s;
INSERT INTO lease_nodes (lease_id, node_id, hostname)
  SELECT 'lse_l' || i, 'nod_' || c || '_' || j, 'n' || j
    FROM (SELECT i, (i % ${books}) * ${CLUSTERS_PER_BOOK} + (i / ${books}) % ${CLUSTERS_PER_BOOK} AS c,
                 ${nodesPerCluster - 1} - i / ${providers} AS j
            FROM generate_series(0::bigint, ${liveLeases - 1}) i) s;

-- Open orders, resting: sells of one node from the book's clusters (the
-- nodes below the leased ones), buys of 1-4 nodes from the buyers.
INSERT INTO orders (id, account_id, organization_id, side, order_type, gpu_type, zone,
    gpu_count, duration_hours, limit_price_cents, allow_partial, start_ms, cluster_id,
    status, filled_gpus, cancelled_gpus, created_ms, book_state, remaining_nodes, seq,
    accept_seq, accepted_ms, arrive_ms, expires_ms, rest_price_cents)
  SELECT 'ord_o' || i,
         CASE WHEN sell THEN 'acc_p' || c ELSE 'acc_b' || i % ${BUYERS} END,
         CASE WHEN sell THEN 'org_p' || c ELSE 'org_b' || i % ${BUYERS} END,
         (CASE WHEN sell THEN 'sell' ELSE 'buy' END)::gpux_side, 'limit'::gpux_order_type,
         ${gpu('b')}, ${zone('b')}, CASE WHEN sell THEN 8 ELSE 8 * (1 + i % 4) END,
         CASE WHEN sell THEN 720 ELSE 1 + i % 24 END, price, false, at,
         CASE WHEN sell THEN 'cls_' || c END, 'pending'::gpux_order_status, 0, 0, at,
         'resting'::gpux_book_state, CASE WHEN sell THEN 1 ELSE 1 + i % 4 END, i + 1, i + 1, at, at,
         CASE WHEN sell THEN at + ${719 * hour} ELSE at + ${day} END, price
    FROM (SELECT i, i % ${SELL_EVERY} = 0 AS sell, i % ${books} AS b,
                 (i % ${books}) * ${CLUSTERS_PER_BOOK} + (i / ${books}) % ${CLUSTERS_PER_BOOK} AS c,
                 CASE WHEN i % ${SELL_EVERY} = 0 THEN 200 + i % 100 ELSE 100 + i % 100 END AS price,
                 ${now - hour} + i AS at
            FROM generate_series(0::bigint, ${o.open - 1}) i) s;
`;
}

function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 === 1 ? (s[m] ?? NaN) : ((s[m - 1] ?? NaN) + (s[m] ?? NaN)) / 2;
}

const fmt = (ms: number): string => `${(ms / 1000).toFixed(2)} s`;

async function seed(scratch: ScratchDatabase, o: Options): Promise<void> {
  const db = openPostgres(scratch.url, 1);
  try {
    await migrate(db);
    await db.exec(seedSql(o, Date.now()));
    // As autovacuum would have by then: the planner's statistics, the visibility map.
    await db.exec('VACUUM ANALYZE');
  } finally {
    await db.close();
  }
}

/** Wall time of Market.open, and the CPU time this process spent in it (less sensitive to a busy machine). */
async function timeMarketOpen(url: string): Promise<{ ms: number; cpuMs: number; orders: number }> {
  const db = openPostgres(url);
  try {
    // Each run from a clean heap (npm run bench passes --expose-gc), not
    // paying for the previous run's books.
    globalThis.gc?.();
    const t0 = performance.now();
    const cpu0 = process.cpuUsage();
    const market = await Market.open(db, { tickIntervalMs: 0 });
    const ms = performance.now() - t0;
    const cpu = process.cpuUsage(cpu0);
    const cpuMs = (cpu.user + cpu.system) / 1000;
    let orders = 0;
    for (const g of GPU_TYPES)
      for (const z of ZONES) orders += market.writer(g, z).view.orders.size;
    await market.close();
    return { ms, cpuMs, orders };
  } finally {
    await db.close();
  }
}

/** Spawn to the first GET /readyz answered 200, and what the exchange printed. */
async function timeProcessStart(url: string): Promise<number> {
  const t0 = performance.now();
  const child = spawn(process.execPath, [...EXCHANGE_NODE_FLAGS, MAIN], {
    env: {
      ...process.env,
      HOST: '127.0.0.1',
      PORT: '0',
      GRPC_PORT: '0',
      LOG_LEVEL: 'warn',
      DATABASE_URL: url,
      // No NATS here: the in-process bus on purpose.
      GPUX_IN_PROCESS_BUS: '1',
      GPUX_ADMIN_TOKEN: 'bench-restart-admin-token-0123456789',
      GPUX_DEMO: '0',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  try {
    const base = await new Promise<string>((resolve, reject) => {
      // The banner is on stderr, the log records on stdout: either may say it.
      const seen = (chunk: Buffer): void => {
        output += chunk.toString();
        const m = /listening on (http:\/\/\S+)/.exec(output);
        if (m?.[1] !== undefined) resolve(m[1]);
      };
      child.stdout.on('data', seen);
      child.stderr.on('data', seen);
      child.once('exit', (code) => reject(new Error(`the exchange exited (${code}):\n${output}`)));
    });
    const res = await fetch(`${base}/readyz`);
    if (res.status !== 200) throw new Error(`GET /readyz: ${res.status}`);
    return performance.now() - t0;
  } finally {
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGTERM');
    await exited;
  }
}

export async function runRestartBench(argv: readonly string[]): Promise<void> {
  const o = parseArgs(argv);
  const load = (): string =>
    os
      .loadavg()
      .map((l) => l.toFixed(1))
      .join(' ');
  console.log(
    `bench restart: ${o.open.toLocaleString('en')} open orders over ${o.history.toLocaleString('en')} closed; Market.open ×${o.runs}, process start ×${o.starts}; load average ${load()}`,
  );
  if (o.starts > 0) buildExchange();
  const scratch = await createDatabase(uniqueDatabaseName('gpux_restart'));
  const stop = (): void => void scratch.drop().finally(() => process.exit(130));
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  let verdict = 0;
  try {
    let t = performance.now();
    await seed(scratch, o);
    const seedMs = performance.now() - t;
    const counts = await (async () => {
      const db = openPostgres(scratch.url, 1);
      try {
        return await db.query<{ t: string; n: number; mb: number }>(
          `SELECT relname AS t, n_live_tup::int AS n,
                  (pg_total_relation_size(relid) / 1048576)::int AS mb
             FROM pg_stat_user_tables
            WHERE relname IN ('orders', 'fills', 'leases', 'lease_nodes', 'nodes')
            ORDER BY relname`,
        );
      } finally {
        await db.close();
      }
    })();
    console.log(
      `  PostgreSQL ${scratch.serverVersion}, database ${scratch.name}, seeded in ${fmt(seedMs)}: ` +
        counts.map((c) => `${c.t} ${c.n.toLocaleString('en')} rows (${c.mb} MiB)`).join(', '),
    );

    const opens: number[] = [];
    const cpus: number[] = [];
    for (let r = 0; r < o.runs; r++) {
      const { ms, cpuMs, orders } = await timeMarketOpen(scratch.url);
      if (orders !== o.open) fail(`Market.open loaded ${orders} open orders, expected ${o.open}`);
      opens.push(ms);
      cpus.push(cpuMs);
    }
    console.log(
      `  Market.open (12 books, ${o.open.toLocaleString('en')} open orders): ${opens.map(fmt).join(', ')}; median ${fmt(median(opens))}` +
        ` (this process's CPU: ${cpus.map(fmt).join(', ')})`,
    );
    const starts: number[] = [];
    for (let r = 0; r < o.starts; r++) starts.push(await timeProcessStart(scratch.url));
    if (starts.length > 0) {
      console.log(
        `  exchange process, spawn to first answered request: ${starts.map(fmt).join(', ')}; median ${fmt(median(starts))}`,
      );
    }
    t = median(opens);
    const ok = t <= LIMIT_MS;
    console.log(
      `restart: Market.open median ${fmt(t)} (limit ${fmt(LIMIT_MS)}) ${ok ? 'met' : 'NOT met'}` +
        (starts.length > 0 ? `; process start median ${fmt(median(starts))}` : '') +
        `; load average ${load()} on ${os.cpus().length} cores`,
    );
    if (!ok) verdict = 1;
  } finally {
    if (o.keep) console.log(`  kept database ${scratch.name} (${scratch.url})`);
    else await scratch.drop();
  }
  if (verdict !== 0) process.exit(verdict);
}
