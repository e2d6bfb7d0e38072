// npm run bench -- feed [--subscribers N] [--rate R] [--seconds S] [--warmup W] [--runs K]
//
// What watchers of the live feed (GET /v1/stream, docs/api/market-data.md)
// cost the order path: the HTTP bench's order load (http-bench.ts, the
// built exchange as a child process on PostgreSQL, R orders/s open loop
// over four books) with and without N subscribers (default 1,000) watching
// the busiest book (h100/us-west-1, 40 % of the orders). The phases
// alternate, K times each (default 2): without, with, without, with … so
// that a drift of the machine or of the books' depth weighs on both alike.
//
// The subscribers run in a process of their own (feed-subscribers.ts), so
// reading them never delays the load whose latencies are measured. Each
// checks that every update is numbered one more than the last; every 50th
// measures fan-out: when a level update arrived minus the time the exchange
// stamped on it as its batch committed.
//
// The last line: `feed: subscribers <N> | order p99 <a> ms (without <b> ms)
// | update fan-out p99 <c> ms | gaps <g>`. Targets (issue 22): a ≤ 1.2 × b,
// c ≤ 50 ms, no gap at a subscriber that kept up. Figures:
// docs/benchmarks.md, "The live feed".

import { fork } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import os from 'node:os';
import { fileURLToPath } from 'node:url';

import { Pool } from 'undici';

import { benchFail, parseCounts } from './bench-args.js';
import type { Seen } from './feed-subscribers.js';
import { Driver, fmtLatencyMs, fmtMs, onboard } from './http-bench.js';
import type { PhaseResult } from './http-bench.js';
import { LeanHttpClient } from './http-client.js';
import { BenchExchange, PgProbe, buildExchange, cpuMsOfChildren } from './http-exchange.js';
import { makeSchedule } from './http-workload.js';
import type { PhaseSpec } from './http-workload.js';
import { summarize } from './stats.js';

const USAGE =
  'usage: npm run bench -- feed [--subscribers N] [--rate R] [--seconds S] [--warmup W] [--runs K]';
/** The busiest book of the load (http-workload.ts BOOKS). */
const WATCHED = '/v1/stream?gpu_type=h100&zone=us-west-1';
const SAMPLE_EVERY = 50;
const PAUSE_MS = 1000;
const SEED = 20261122;
const CONNECTIONS = 64;

function fail(message: string, code = 1): never {
  benchFail('feed', message, code);
}

/** The subscribers' process: open them, close them and hear what they saw. */
class Subscribers {
  private readonly child: ChildProcess;

  constructor() {
    const file = fileURLToPath(new URL('./feed-subscribers.ts', import.meta.url));
    this.child = fork(file, [], { execArgv: ['--import', 'tsx'], stdio: 'inherit' });
  }

  private ask<T>(message: unknown): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const onExit = (): void => reject(new Error('the subscribers process exited'));
      this.child.once('exit', onExit);
      this.child.once('message', (m) => {
        this.child.off('exit', onExit);
        resolve(m as T);
      });
      this.child.send(message as object);
    });
  }

  async open(url: string, count: number): Promise<void> {
    await this.ask({ cmd: 'open', url, count, sampleEvery: SAMPLE_EVERY });
  }

  close(): Promise<Seen> {
    return this.ask<Seen>({ cmd: 'close' });
  }

  stop(): void {
    this.child.kill();
  }
}

const mean = (xs: readonly number[]): number => xs.reduce((a, x) => a + x, 0) / xs.length;

export async function runFeedBench(argv: readonly string[]): Promise<void> {
  const o = parseCounts(
    'feed',
    argv,
    { subscribers: 1000, rate: 1000, seconds: 15, warmup: 5, runs: 2 },
    USAGE,
  );
  if (o.subscribers < 1 || o.rate < 1 || o.seconds < 1 || o.runs < 1) {
    fail('--subscribers, --rate, --seconds and --runs must be at least 1', 2);
  }
  const specs: PhaseSpec[] = [];
  if (o.warmup > 0)
    specs.push({ name: 'warm-up', rate: o.rate, seconds: o.warmup, measured: false });
  for (let k = 0; k < o.runs; k++) {
    specs.push({ name: 'without', rate: o.rate, seconds: o.seconds, measured: true });
    specs.push({ name: 'with', rate: o.rate, seconds: o.seconds, measured: true });
  }
  const schedule = makeSchedule(specs, SEED, 8, 24);
  const cpus = os.cpus();
  console.log(
    `bench feed: ${o.rate} orders/s × ${o.seconds} s, ${o.runs} × (without, with ${o.subscribers} subscribers of h100/us-west-1), warm-up ${o.warmup} s; node ${process.version}, ${cpus.length} × ${cpus[0]?.model.trim() ?? 'unknown cpu'}`,
  );

  buildExchange();
  const exchange = new BenchExchange();
  const subscribers = new Subscribers();
  let pool: Pool | undefined;
  let client: LeanHttpClient | undefined;
  let probe: PgProbe | undefined;
  try {
    const url = await exchange.start({
      // Extra flags for the exchange's node, e.g. --cpu-prof (as for the HTTP bench).
      nodeArgs: (process.env['BENCH_EXCHANGE_NODE_ARGS'] ?? '').split(' ').filter((a) => a !== ''),
      env: {
        GPUX_STREAMS_PER_ADDRESS: String(o.subscribers + 10),
        GPUX_RATE_PUBLIC_PER_MINUTE: '999999999',
      },
      onLog: (line) => console.log(`  exchange| ${line}`),
    });
    pool = new Pool(url, { connections: 8 });
    const parties = await onboard(exchange, pool, schedule);
    probe = await PgProbe.open(exchange.databaseUrl, exchange.dbName);
    client = new LeanHttpClient(url, CONNECTIONS);
    await client.open();
    const driver = new Driver(client, schedule, parties, exchange.pid, probe);

    const without: PhaseResult[] = [];
    const withSubs: PhaseResult[] = [];
    const seen: Seen[] = [];
    for (const phase of schedule.phases) {
      globalThis.gc?.();
      const watched = phase.name === 'with';
      if (watched) {
        await subscribers.open(`${url}${WATCHED}`, o.subscribers);
        await new Promise((r) => setTimeout(r, PAUSE_MS));
      }
      // The exchange's children: its feed writer (docs/architecture.md) and agents' service.
      const writerCpu = (): Promise<number | undefined> =>
        exchange.pid === undefined ? Promise.resolve(undefined) : cpuMsOfChildren(exchange.pid);
      const writer0 = await writerCpu();
      const t0 = performance.now();
      const r = await driver.run(phase);
      const writer1 = await writerCpu();
      const writerPct =
        writer0 === undefined || writer1 === undefined
          ? undefined
          : ((writer1 - writer0) / (performance.now() - t0)) * 100;
      const s = watched ? await subscribers.close() : undefined;
      if (s !== undefined) seen.push(s);
      const label = phase.measured
        ? `${phase.name}${watched ? ` ${o.subscribers}` : ''}`
        : 'warm-up';
      const pct = (v: number | undefined): string => (v === undefined ? '?' : `${v.toFixed(0)}%`);
      const mine =
        (r.cpu.exchange ?? 0) +
        (writerPct ?? 0) +
        (r.cpu.postgres ?? 0) +
        r.cpu.bench +
        (s?.cpuPercent ?? 0);
      const others = r.cpu.machine === undefined ? undefined : Math.max(0, r.cpu.machine - mine);
      const cpu = `cpu: exchange ${pct(r.cpu.exchange)} + its children ${pct(writerPct)}, postgres ${pct(r.cpu.postgres)}, bench ${pct(r.cpu.bench)}; machine ${pct(r.cpu.machine)} of ${r.cpu.cores * 100}% (other processes ${pct(others)})`;
      console.log(
        `  ${label.padEnd(14)} ${Math.round(r.achieved)} orders/s  ${fmtLatencyMs(r.latency)}  errors ${r.errors.total()}; ${cpu}`,
      );
      if (s !== undefined) {
        const fan = summarize(Float64Array.from(s.fanOutMs, (ms) => ms * 1e6));
        const closed =
          Object.entries(s.closed)
            .map(([k, v]) => `${k} ${v}`)
            .join(', ') || 'none';
        console.log(
          `  ${''.padEnd(14)} subscribers: ${Math.round(s.updates / s.subscribers)} updates each, gaps ${s.gaps}, ended by the exchange: ${closed}, broken ${s.broken}; their process ${s.cpuPercent.toFixed(0)}% cpu; fan-out ${fmtLatencyMs(fan)} (${fan.samples} samples)`,
        );
      }
      if (phase.measured) (watched ? withSubs : without).push(r);
      await new Promise((r) => setTimeout(r, PAUSE_MS));
    }

    const p99With = mean(withSubs.map((r) => r.latency.p99));
    const p99Without = mean(without.map((r) => r.latency.p99));
    const fanOut = summarize(
      Float64Array.from(
        seen.flatMap((s) => s.fanOutMs),
        (ms) => ms * 1e6,
      ),
    );
    const gaps = seen.reduce((a, s) => a + s.gaps, 0);
    const dropped = seen.reduce((a, s) => a + (s.closed['slow_consumer'] ?? 0), 0);
    const errors = [...without, ...withSubs].reduce((a, r) => a + r.errors.total(), 0);
    const verdict = (ok: boolean): string => (ok ? 'met' : 'NOT met');
    const ratio = p99With / p99Without;
    console.log(
      `targets: order p99 with ≤ 1.2 × without ${verdict(ratio <= 1.2)} (${ratio.toFixed(2)}×); fan-out p99 ≤ 50 ms ${verdict(fanOut.p99 <= 50_000)} (${fmtMs(fanOut.p99)} ms); no gap ${verdict(gaps === 0)} (${gaps}; ${dropped} subscribers dropped as slow); zero errors ${verdict(errors === 0)} (${errors})`,
    );
    console.log(
      `feed: subscribers ${o.subscribers} | order p99 ${fmtMs(p99With)} ms (without ${fmtMs(p99Without)} ms) | update fan-out p99 ${fmtMs(fanOut.p99)} ms | gaps ${gaps}`,
    );
  } catch (err) {
    console.error('bench feed: failed:', err);
    process.exitCode = 1;
  } finally {
    subscribers.stop();
    client?.close();
    await pool?.destroy().catch(() => undefined);
    await probe?.close();
    await exchange.stop();
  }
}
