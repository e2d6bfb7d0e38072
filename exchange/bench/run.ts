// Matching-engine bench. Run from the repo root:
//
//   npm run bench -- engine [--orders N] [--seed S] [--warmup W] [--runs R]
//
// `npm run bench -- http …` runs the HTTP bench instead (http-bench.ts),
// `npm run bench -- agents …` the agents bench (agents-bench.ts).
//
// (env BENCH_ORDERS / BENCH_SEED / BENCH_WARMUP / BENCH_RUNS work too). What the streams
// are and what the figures mean: docs/benchmarks.md. The last line is the
// summary, in a fixed form other tools may parse.

import { spawnSync } from 'node:child_process';
import os from 'node:os';
import { fileURLToPath } from 'node:url';

import { OrderBook } from '../src/matching/order-book.js';
import type { BookEvent, OrderInput } from '../src/matching/types.js';
import {
  BUY,
  CANCEL,
  MARKET,
  T0,
  allRulesStream,
  plainStream,
  type OrderStream,
} from './order-stream.js';
import { runAgentsBench } from './agents-bench.js';
import { runCandlesBench } from './candles-bench.js';
import { AGENTS_USAGE } from './agents-options.js';
import { runFailoverBench } from './failover-bench.js';
import { runFeedBench } from './feed-bench.js';
import { runGcBench } from './gc-bench.js';
import { runHttpBench } from './http-bench.js';
import { runPgReplay } from './pg-replay.js';
import { runRestartBench } from './restart-bench.js';
import { runPeer, runPeerTimed, type PeerCounts } from './peer-nodejs-order-book.js';
import {
  Counter,
  fmtLatency,
  fmtRate,
  fmtRatio,
  fmtUs,
  perSecond,
  summarize,
  type LatencySummary,
} from './stats.js';

// ---------------------------------------------------------------- arguments

interface Options {
  readonly suite: string;
  readonly orders: number;
  readonly seed: number;
  readonly warmup: number;
  /** Throughput passes on the plain stream; the best counts. */
  readonly runs: number;
}

const USAGE =
  'usage: npm run bench -- engine [--orders N] [--seed S] [--warmup W] [--runs R]\n' +
  '       npm run bench -- http [--rates R1,R2,...] [--seconds S] [--warmup W] [--connections C] [--seed S] [--cpu-prof]\n' +
  '       npm run bench -- lease [--leases N] [--provisioner simulated|kubernetes] [--nodes K]\n' +
  '       npm run bench -- failover [--runs R] [--clients C] [--lease S]\n' +
  '       npm run bench -- candles [--fills N] [--runs R] [--keep]\n' +
  '       npm run bench -- feed [--subscribers N] [--rate R] [--seconds S] [--warmup W] [--runs K]\n' +
  `       ${AGENTS_USAGE.replace('usage: ', '')}`;

function parseArgs(argv: readonly string[]): Options {
  let suite = 'engine';
  let orders = intEnv('BENCH_ORDERS', 1_000_000);
  let seed = intEnv('BENCH_SEED', 20261122);
  let warmup = intEnv('BENCH_WARMUP', 50_000);
  let runs = intEnv('BENCH_RUNS', 3);
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i] ?? '';
    const [flag, inline] = a.startsWith('--') && a.includes('=') ? a.split('=', 2) : [a, undefined];
    const value = (): number => {
      const v = inline ?? argv[++i];
      const n = Number(v);
      if (v === undefined || !Number.isSafeInteger(n) || n < 0)
        fail(`${flag}: expected a whole number, got ${v}`);
      return n;
    };
    switch (flag) {
      case '--orders':
        orders = value();
        break;
      case '--seed':
        seed = value();
        break;
      case '--warmup':
        warmup = value();
        break;
      case '--runs':
        runs = value();
        break;
      case '-h':
      case '--help':
        console.log(USAGE);
        process.exit(0);
        break;
      default:
        if (a.startsWith('-')) fail(`unknown flag ${a}\n${USAGE}`);
        suite = a;
    }
  }
  if (suite !== 'engine') fail(`unknown bench "${suite}"\n${USAGE}`);
  if (orders < 1) fail('--orders must be at least 1');
  if (runs < 1) fail('--runs must be at least 1');
  return { suite, orders, seed: seed >>> 0, warmup, runs };
}

function intEnv(name: string, dflt: number): number {
  const v = process.env[name];
  if (v === undefined || v === '') return dflt;
  const n = Number(v);
  if (!Number.isSafeInteger(n) || n < 0) fail(`${name}: expected a whole number, got ${v}`);
  return n;
}

function fail(message: string): never {
  console.error(`bench: ${message}`);
  process.exit(2);
}

// ---------------------------------------------------------------- our engine

/** The `OrderInput` of place command i; every field present so all inputs share one shape. */
function inputOf(s: OrderStream, i: number, now: number): OrderInput {
  const buy = s.side[i] === BUY;
  const market = s.type[i] === MARKET;
  const p = s.party[i] ?? 0;
  const delay = s.startDelayMs[i] ?? 0;
  const flex = s.flexHours[i] ?? 0;
  const resaleMs = s.resaleWindowMs[i] ?? 0;
  const resaleFrom = now + (s.resaleStartMs[i] ?? 0);
  return {
    id: s.ids[i] ?? '',
    side: buy ? 'buy' : 'sell',
    type: market ? 'market' : 'limit',
    accountId: s.accounts[p] ?? '',
    orgId: s.orgs[p] ?? '',
    nodes: s.nodes[i] ?? 0,
    durationHours: s.durationHours[i] ?? 0,
    limitPrice: market ? undefined : s.price[i],
    allowPartial: buy && s.allowPartial[i] === 1 ? true : undefined,
    allOrNothing: resaleMs === 0 ? undefined : true,
    startAt: delay === 0 ? undefined : now + delay,
    flexibleWindowHours: flex === 0 ? undefined : flex,
    expiresAt: s.neverExpire ? Infinity : undefined,
    clusterId: buy ? undefined : s.clusters[p],
    windowStartAt: resaleMs === 0 ? undefined : resaleFrom,
    windowEndAt: resaleMs === 0 ? undefined : resaleFrom + resaleMs,
  };
}

interface EngineCounts {
  /** Rejected places by code. */
  readonly rejections: Counter;
  /** Where accepted places ended up after their own command. */
  readonly states: Counter;
  /** `cancelled` events by reason (incl. timers fired by any command). */
  readonly engineCancels: Counter;
  matchedNodes: number;
  matchingSteps: number;
  cancelHits: number;
  cancelMisses: number;
  /** Resting GPUs per side once the stream is done (a sanity figure). */
  bidGpus: number;
  askGpus: number;
}

function newEngineCounts(): EngineCounts {
  return {
    rejections: new Counter(),
    states: new Counter(),
    engineCancels: new Counter(),
    matchedNodes: 0,
    matchingSteps: 0,
    cancelHits: 0,
    cancelMisses: 0,
    bidGpus: 0,
    askGpus: 0,
  };
}

function countEvents(c: EngineCounts, events: readonly BookEvent[]): void {
  for (const e of events) {
    if (e.type === 'matched') {
      c.matchingSteps++;
      for (const f of e.fills) c.matchedNodes += f.nodes;
    } else if (e.type === 'cancelled') {
      c.engineCancels.add(e.reason);
    }
  }
}

/** The whole stream on a fresh book, no per-command timing; returns the rejection count. */
function runEngine(s: OrderStream): number {
  const book = new OrderBook();
  const { kind, target, ids, stepMs } = s;
  let rejected = 0;
  for (let i = 0; i < s.length; i++) {
    const now = T0 + i * stepMs;
    if (kind[i] === CANCEL) {
      book.cancel(ids[target[i] ?? 0] ?? '', now);
    } else if (!book.place(inputOf(s, i, now), now).ok) {
      rejected++;
    }
  }
  return rejected;
}

/**
 * The whole stream on a fresh book, timing every command into `latNs`; inputs
 * are built and results counted outside the timed part.
 */
function runEngineTimed(s: OrderStream, latNs: Float64Array): EngineCounts {
  const book = new OrderBook();
  const c = newEngineCounts();
  const { kind, target, ids, stepMs } = s;
  for (let i = 0; i < s.length; i++) {
    const now = T0 + i * stepMs;
    if (kind[i] === CANCEL) {
      const id = ids[target[i] ?? 0] ?? '';
      const t0 = process.hrtime.bigint();
      const r = book.cancel(id, now);
      latNs[i] = Number(process.hrtime.bigint() - t0);
      if (r.ok) c.cancelHits++;
      else c.cancelMisses++;
      countEvents(c, r.events);
    } else {
      const input = inputOf(s, i, now);
      const t0 = process.hrtime.bigint();
      const r = book.place(input, now);
      latNs[i] = Number(process.hrtime.bigint() - t0);
      if (r.ok) c.states.add(r.state);
      else c.rejections.add(r.code);
      countEvents(c, r.events);
    }
  }
  const snap = book.snapshot(1_000_000);
  for (const l of snap.bids) c.bidGpus += l.gpus;
  for (const l of snap.asks) c.askGpus += l.gpus;
  return c;
}

// ---------------------------------------------------------------- driver

function gc(): void {
  globalThis.gc?.();
}

interface Measured<C> {
  /** The best throughput pass. */
  readonly perSec: number;
  /** Every throughput pass, in order. */
  readonly passes: readonly number[];
  readonly latency: LatencySummary;
  readonly counts: C;
}

/**
 * Warm-up on a separate stream, then `runs` throughput passes (one clock
 * around each whole loop; the best counts, the machine being shared), then a
 * latency pass; a fresh book and a full GC before each.
 */
function measure<C>(
  s: OrderStream,
  warm: OrderStream,
  runs: number,
  run: (s: OrderStream) => unknown,
  timed: (s: OrderStream, latNs: Float64Array) => C,
): Measured<C> {
  gc();
  run(warm);
  const passes: number[] = [];
  for (let k = 0; k < runs; k++) {
    gc();
    const t0 = process.hrtime.bigint();
    run(s);
    passes.push(perSecond(s.length, process.hrtime.bigint() - t0));
  }
  gc();
  const lat = new Float64Array(s.length);
  const counts = timed(s, lat);
  gc();
  return { perSec: Math.max(...passes), passes, latency: summarize(lat), counts };
}

function fmtPasses(m: Measured<unknown>): string {
  return m.passes.length < 2 ? '' : ` (best of ${m.passes.map(fmtRate).join(', ')})`;
}

function pad(label: string): string {
  return `  ${label}`.padEnd(22);
}

function main(): void {
  const opt = parseArgs(process.argv.slice(2));
  const cpus = os.cpus();
  if (globalThis.gc === undefined) {
    console.warn(
      'bench: global.gc is not exposed (run with node --expose-gc); results are noisier',
    );
  }
  const warmN = Math.min(opt.warmup, opt.orders);

  let t = process.hrtime.bigint();
  const plain = plainStream(opt.orders, opt.seed);
  const plainWarm = plainStream(warmN, opt.seed ^ 0x5bd1e995);
  const genMs = Number(process.hrtime.bigint() - t) / 1e6;

  console.log(
    `bench engine: seed ${opt.seed}, ${opt.orders} commands per stream, warm-up ${warmN} (separate seed)`,
  );
  console.log(
    `node ${process.version}, ${cpus.length} × ${cpus[0]?.model.trim() ?? 'unknown cpu'}, ${os.platform()} ${os.arch()}`,
  );
  console.log(
    `plain stream: ${plain.places} places + ${plain.cancels} cancels, divisible limit orders, 1 ms per command (generated in ${genMs.toFixed(0)} ms)`,
  );

  // -- plain stream: ours
  const ours = measure(plain, plainWarm, opt.runs, runEngine, runEngineTimed);
  const oc = ours.counts;
  console.log(
    `${pad('engine')}${fmtRate(ours.perSec)} orders/s  ${fmtLatency(ours.latency)}${fmtPasses(ours)}`,
  );
  console.log(
    `${pad('')}matched ${oc.matchedNodes} nodes in ${oc.matchingSteps} steps; cancels ${oc.cancelHits} found / ${oc.cancelMisses} not found; placed: ${oc.states.toString()}`,
  );
  console.log(`${pad('')}book at the end: ${oc.bidGpus / 8} bid / ${oc.askGpus / 8} ask nodes`);
  const plainRejections = oc.rejections.total();
  if (plainRejections > 0) {
    console.error(
      `\nbench FAILED: the plain stream must never be rejected by the engine, got ${plainRejections}: ${oc.rejections.toString()}`,
    );
    process.exit(1);
  }

  // -- plain stream: the peer
  const peer = measure(plain, plainWarm, opt.runs, runPeer, runPeerTimed);
  const pc: PeerCounts = peer.counts;
  console.log(
    `${pad('nodejs-order-book')}${fmtRate(peer.perSec)} orders/s  ${fmtLatency(peer.latency)}${fmtPasses(peer)}`,
  );
  console.log(
    `${pad('')}matched ${pc.matchedNodes} nodes in ${pc.matchingOrders} taker orders; cancels ${pc.cancelHits} found / ${pc.cancelMisses} not found; errors ${pc.errors}`,
  );
  console.log(`${pad('')}book at the end: ${pc.bidNodes} bid / ${pc.askNodes} ask nodes`);
  if (pc.errors > 0) console.warn('bench: the peer reported errors on the plain stream');
  const fillRatio = pc.matchedNodes === 0 ? NaN : oc.matchedNodes / pc.matchedNodes;
  console.log(`${pad('')}matched nodes, engine / peer: ${fmtRatio(fillRatio)}`);

  // -- all-rules stream: ours only
  t = process.hrtime.bigint();
  const rules = allRulesStream(opt.orders, opt.seed + 1);
  const rulesWarm = allRulesStream(warmN, (opt.seed + 1) ^ 0x5bd1e995);
  const rulesGenMs = Number(process.hrtime.bigint() - t) / 1e6;
  console.log(
    `all-rules stream: ${rules.places} places + ${rules.cancels} cancels, 20 orgs × 5 accounts, AON/market/flexible/scheduled, resales, expiries, 1 s per command (generated in ${rulesGenMs.toFixed(0)} ms)`,
  );
  const all = measure(rules, rulesWarm, 1, runEngine, runEngineTimed);
  const ac = all.counts;
  console.log(`${pad('engine')}${fmtRate(all.perSec)} orders/s  ${fmtLatency(all.latency)}`);
  console.log(
    `${pad('')}matched ${ac.matchedNodes} nodes in ${ac.matchingSteps} steps; cancels ${ac.cancelHits} found / ${ac.cancelMisses} not found; book at the end: ${ac.bidGpus / 8} bid / ${ac.askGpus / 8} ask nodes`,
  );
  console.log(`${pad('')}placed: ${ac.states.toString()}`);
  console.log(`${pad('')}rejected by code: ${ac.rejections.toString()}`);
  console.log(`${pad('')}engine cancels by reason: ${ac.engineCancels.toString()}`);

  // -- verdict and summary
  const ratio = ours.perSec / peer.perSec;
  const verdict = (ok: boolean): string => (ok ? 'met' : 'NOT met');
  console.log(
    `targets (plain stream): ≥ 4× peer throughput ${verdict(ratio >= 4)} (${fmtRatio(ratio)}×); p99 < 10 us ${verdict(ours.latency.p99 < 10)} (${fmtUs(ours.latency.p99)} us); goal 1,000,000 orders/s ${verdict(ours.perSec >= 1_000_000)}`,
  );
  console.log(
    `engine (all rules): ${fmtRate(all.perSec)} orders/s p50 ${fmtUs(all.latency.p50)} p99 ${fmtUs(all.latency.p99)} p99.9 ${fmtUs(all.latency.p999)} us`,
  );
  console.log(
    `engine: ${fmtRate(ours.perSec)} orders/s p99 ${fmtUs(ours.latency.p99)} us | nodejs-order-book: ${fmtRate(peer.perSec)} orders/s p99 ${fmtUs(peer.latency.p99)} us | ratio ${fmtRatio(ratio)}x`,
  );
}

/** `npm run bench -- lease …`: test/bench/lease-bench.ts under tsx; its exit code. */
function runLeaseBench(argv: readonly string[]): number {
  const file = fileURLToPath(new URL('../../test/bench/lease-bench.ts', import.meta.url));
  const r = spawnSync(process.execPath, ['--import', 'tsx', file, ...argv], { stdio: 'inherit' });
  return r.status ?? 1;
}

// The suite is the one word among the arguments; flag values are numbers.
const args = process.argv.slice(2);
// The lease bench runs the exchange and the agent as programs; the exchange
// never imports the agent, so it lives in test/bench/ and runs as its own process.
if (args.includes('lease')) process.exit(runLeaseBench(args));
else if (args.includes('http')) await runHttpBench(args);
else if (args.includes('agents')) await runAgentsBench(args);
else if (args.includes('failover')) await runFailoverBench(args);
else if (args.includes('gc')) await runGcBench(args);
else if (args.includes('restart')) await runRestartBench(args);
else if (args.includes('pg-replay')) await runPgReplay(args);
else if (args.includes('candles')) await runCandlesBench(args);
else if (args.includes('feed')) await runFeedBench(args);
else main();
