// Agents bench (issue 18): N simulated provider agents heartbeating beside
// the customers' REST load, then two floods of heartbeats; does agent
// traffic reach the customers' path? Run from the repo root:
//
//   npm run bench -- agents [--agents 5000] [--seconds 20] [--rate 200] [--interval 5]
//                           [--flood 2000] [--flood-seconds 6] [--fleets P]
//                           [--connections 16] [--seed S]
//
// The exchange runs as the HTTP bench runs it (http-exchange.ts: built, a
// child process on a PostgreSQL database of its own, D18 limits lifted),
// without NATS_URL: the in-process bus, so 5,000 Attach calls do not make
// 5,000 JetStream consumers. Phases: REST alone; the agents attach and
// heartbeat every interval (agents-fleet.ts, in child processes); REST
// beside them; one provider's 2,000 heartbeats at once; 2,000 clusters'
// one heartbeat each at once. Method and figures: docs/benchmarks.md. The
// last line is the summary, in a fixed form (agents-summary.ts).

import net from 'node:net';
import os from 'node:os';
import { performance } from 'node:perf_hooks';

import { Pool } from 'undici';

import { cpuNow, fmtCpu } from './agents-cpu.js';
import type { Cpu } from './agents-cpu.js';
import type { Calls, Codes, FleetAgent, FleetAnswer } from './agents-fleet.js';
import { Fleets } from './agents-fleets.js';
import {
  AGENTS_USAGE,
  AgentsUsageError,
  fleetCount,
  parseAgentsArgs,
  shares,
  sliceOf,
} from './agents-options.js';
import type { AgentsOptions } from './agents-options.js';
import { ORDER_SHARE, RestLoad } from './agents-rest.js';
import type { RestResult } from './agents-rest.js';
import { fmtMs, summaryLine, verdictLine } from './agents-summary.js';
import { inParallel } from './http-bench.js';
import { LeanHttpClient } from './http-client.js';
import { BenchExchange, buildExchange } from './http-exchange.js';
import { BOOKS, makeSchedule } from './http-workload.js';
import { summarize } from './stats.js';
import type { LatencySummary } from './stats.js';

/** The REST load's own accounts (the agents' providers are others). */
const REST_SELLERS = 4;
const REST_BUYERS = 8;
/** Admin API calls in flight while onboarding. */
const ONBOARD_CONCURRENCY = 16;
/** REST at the load's rate before the first measured phase, s. */
const WARMUP_SECONDS = 3;

type Attached = Extract<FleetAnswer, { kind: 'attached' }>;
type Collected = Extract<FleetAnswer, { kind: 'collected' }>;
type Flooded = Extract<FleetAnswer, { kind: 'flooded' }>;

const nowMs = (): number => performance.timeOrigin + performance.now();
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(port));
    });
  });
}

function fmtLatency(l: LatencySummary): string {
  const ms = (us: number): string => fmtMs(us / 1000);
  return `p50 ${ms(l.p50)} p99 ${ms(l.p99)} p99.9 ${ms(l.p999)} max ${ms(l.max)} ms`;
}

function fmtCodes(codes: Codes): string {
  const e = Object.entries(codes).sort(([a], [b]) => (a < b ? -1 : 1));
  return e.length === 0 ? 'none' : e.map(([k, v]) => `${k} ${v}`).join(', ');
}

function addCodes(into: Codes, from: Codes): Codes {
  for (const [k, v] of Object.entries(from)) into[k] = (into[k] ?? 0) + v;
  return into;
}

/** Heartbeat answers that are errors: anything but OK and RESOURCE_EXHAUSTED (a limit's answer). */
function heartbeatErrors(codes: Codes): number {
  return Object.entries(codes)
    .filter(([k]) => k !== 'OK' && k !== 'RESOURCE_EXHAUSTED')
    .reduce((n, [, v]) => n + v, 0);
}

function latencyOf(calls: readonly Calls[]): LatencySummary {
  const ms = calls.flatMap((c) => c.latenciesMs);
  return summarize(Float64Array.from(ms, (v) => v * 1e6));
}

function pad(label: string): string {
  return `  ${label}`.padEnd(20);
}

function printRest(label: string, r: RestResult, cpu: string): void {
  const refused = r.refused.total() > 0 ? `; 4xx: ${r.refused.toString()}` : '';
  const errors = r.errors.total() > 0 ? ` (${r.errors.toString()})` : '';
  console.log(
    `${pad(label)}rest ${fmtLatency(r.latency)}; errors ${r.errors.total()}${errors}${refused}`,
  );
  console.log(`${pad('')}answers: ${r.ok.toString()}; ${cpu}`);
}

export async function runAgentsBench(argv: readonly string[]): Promise<void> {
  let opt: AgentsOptions;
  try {
    const parsed = parseAgentsArgs(argv);
    if (parsed === 'help') {
      console.log(AGENTS_USAGE);
      return;
    }
    opt = parsed;
  } catch (err) {
    if (!(err instanceof AgentsUsageError)) throw err;
    console.error(`bench: ${err.message}\n${AGENTS_USAGE}`);
    process.exit(2);
  }
  const fleetsN = fleetCount(opt);
  const floodClusters = Math.min(opt.flood, opt.agents);
  const cpus = os.cpus();
  console.log(
    `bench agents: ${opt.agents} agents (2 nodes × 8 GPUs each, a heartbeat every ${opt.interval} s) in ${fleetsN} processes; REST ${opt.rate}/s (${Math.round(ORDER_SHARE * 100)}% orders) × ${opt.seconds} s alone and beside them; floods of ${opt.flood} heartbeats from one provider and of one heartbeat from ${floodClusters} clusters, ${opt.floodSeconds} s of REST each; seed ${opt.seed}`,
  );
  console.log(
    `node ${process.version}, ${cpus.length} × ${cpus[0]?.model.trim() ?? 'unknown cpu'}, ${os.platform()} ${os.arch()}; load average ${os
      .loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}`,
  );

  buildExchange();
  const exchange = new BenchExchange();
  let fleets: Fleets | undefined;
  let stopping = false;
  const onSignal = (signal: NodeJS.Signals): void => {
    if (stopping) return;
    stopping = true;
    console.error(
      `\nbench: ${signal}: stopping the fleets and the exchange, dropping ${exchange.dbName}`,
    );
    void Promise.all([fleets?.stop(), exchange.stop()]).finally(() => process.exit(130));
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);

  let logLines = 0;
  let pool: Pool | undefined;
  let client: LeanHttpClient | undefined;
  try {
    const t0 = performance.now();
    const grpcPort = await freePort();
    const url = await exchange.start({
      // BENCH_EXCHANGE_NODE_ARGS: node flags for the exchange, e.g. `--cpu-prof --cpu-prof-dir=/tmp/p`.
      nodeArgs: (process.env['BENCH_EXCHANGE_NODE_ARGS'] ?? '').split(' ').filter((a) => a !== ''),
      // The in-process bus: no JetStream consumer per attached agent.
      env: { GRPC_PORT: String(grpcPort), NATS_URL: '', NATS_CREDS: '' },
      onLog: (line) => {
        // The start banner (plain text) is not a log line.
        if (!line.startsWith('{')) return;
        logLines++;
        if (logLines <= 10) console.log(`  exchange| ${line}`);
        else if (logLines === 11) console.log('  exchange| (more log lines not shown)');
      },
    });
    pool = new Pool(url, { connections: ONBOARD_CONCURRENCY, pipelining: 1 });
    const admin = pool;

    // The REST load's parties and the order schedule its sells fit in.
    const restSeconds = WARMUP_SECONDS + 2 * opt.seconds + 2 * opt.floodSeconds;
    const orders = Math.ceil(opt.rate * ORDER_SHARE * restSeconds * 1.2) + 10;
    const schedule = makeSchedule(
      [{ name: 'rest', rate: orders, seconds: 1, measured: true }],
      opt.seed,
      REST_SELLERS,
      REST_BUYERS,
    );
    const sellers = await inParallel([...Array(REST_SELLERS).keys()], 4, (p) =>
      exchange.account(admin, `bench-seller-${p}`, `bench-seller-org-${p}`, [
        'trade',
        'read',
        'provider',
      ]),
    );
    const buyers = await inParallel([...Array(REST_BUYERS).keys()], 4, (b) =>
      exchange.account(admin, `bench-buyer-${b}`, `bench-buyer-org-${b}`, ['trade', 'read']),
    );
    const restClusters = await inParallel(schedule.clusters, 4, (c) => {
      const book = BOOKS[c.book];
      const seller = sellers[c.provider];
      if (book === undefined || seller === undefined) throw new Error('bad cluster plan');
      return exchange.cluster(admin, seller.id, book.gpuType, book.zone, c.nodes);
    });

    // The agents: a provider account each (its own token) and a cluster of 2 nodes, across the books.
    const tAgents = performance.now();
    const agents: FleetAgent[] = await inParallel(
      [...Array(opt.agents).keys()],
      ONBOARD_CONCURRENCY,
      async (i) => {
        const name = `agent-${String(i).padStart(5, '0')}`;
        const provider = await exchange.account(admin, `bench-${name}`, `bench-${name}-org`, [
          'read',
          'provider',
        ]);
        const book = BOOKS[i % BOOKS.length] ?? BOOKS[0];
        if (book === undefined) throw new Error('no books');
        const hostnames = [`gpu-${name}-a.bench.internal`, `gpu-${name}-b.bench.internal`];
        const clusterId = await exchange.cluster(
          admin,
          provider.id,
          book.gpuType,
          book.zone,
          hostnames,
        );
        if ((i + 1) % 1000 === 0)
          console.log(`  onboarded ${i + 1} agents' providers and clusters`);
        return { token: provider.token, clusterId, hostnames };
      },
    );
    console.log(
      `exchange ${url} (gRPC 127.0.0.1:${grpcPort}, in-process bus) on PostgreSQL ${exchange.serverVersion} (database ${exchange.dbName}); set up in ${((performance.now() - t0) / 1000).toFixed(1)} s (agents' accounts and clusters ${((performance.now() - tAgents) / 1000).toFixed(1)} s)`,
    );
    console.log(
      `  REST: ${REST_SELLERS} sellers (${schedule.clusters.length} clusters, ${schedule.clusters.reduce((a, c) => a + c.nodes, 0)} nodes), ${REST_BUYERS} buyers; ${schedule.length} orders scheduled`,
    );

    client = new LeanHttpClient(url, opt.connections);
    await client.open();
    const rest = new RestLoad(
      client,
      schedule,
      {
        buyerTokens: buyers.map((b) => b.token),
        sellerTokens: sellers.map((s) => s.token),
        clusterIds: restClusters,
      },
      opt.rate,
      opt.seed,
    );
    fleets = Fleets.start(fleetsN);
    const fleetPids = fleets.pids;
    const cpu = (): Promise<Cpu> => cpuNow(exchange.pid, fleetPids);
    const restPhase = async (
      label: string,
      seconds: number,
      during?: () => Promise<void>,
    ): Promise<RestResult & { fleetsCpuMs: number }> => {
      globalThis.gc?.();
      const c0 = await cpu();
      const w0 = performance.now();
      const r = await rest.run(seconds, during);
      const c1 = await cpu();
      printRest(label, r, fmtCpu(c0, c1, performance.now() - w0));
      return { ...r, fleetsCpuMs: c1.fleets - c0.fleets };
    };
    const cpuStart = await cpu();

    // 1. REST alone.
    const warm = await rest.run(WARMUP_SECONDS);
    const alone = await restPhase(`alone ${opt.seconds} s`, opt.seconds);

    // 2. The agents attach, then heartbeat; nodes go online in the first interval.
    const tAttach = performance.now();
    const epochMs = nowMs();
    const attached = await fleets.all<Attached>((k) => {
      const { from, to } = sliceOf(k, fleetsN, opt.agents);
      return {
        kind: 'attach',
        target: `127.0.0.1:${grpcPort}`,
        agents: agents.slice(from, to),
        intervalSeconds: opt.interval,
        firstIndex: from,
        total: opt.agents,
        epochMs,
      };
    });
    const attachCodes = attached.reduce((c, a) => addCodes(c, a.codes), {} as Codes);
    console.log(
      `${pad('attach')}${opt.agents} agents in ${((performance.now() - tAttach) / 1000).toFixed(1)} s: ${fmtCodes(attachCodes)}`,
    );
    // Every agent heartbeats from its attach on; the last ones' nodes go online in the first interval.
    await sleep(2 * opt.interval * 1000);

    // 3. REST beside the agents' heartbeats.
    const from = nowMs();
    const withAgents = await restPhase(`agents ${opt.seconds} s`, opt.seconds);
    const to = nowMs();
    const beats = await fleets.all<Collected>(() => ({
      kind: 'collect',
      fromMs: from,
      toMs: to,
    }));
    const heartbeat = latencyOf(beats);
    const beatCodes = beats.reduce((c, b) => addCodes(c, b.codes), {} as Codes);
    const lag = Math.max(...beats.map((b) => b.lagP99Ms));
    console.log(
      `${pad('')}heartbeats: ${heartbeat.samples} (${(heartbeat.samples / opt.seconds).toFixed(0)}/s) ${fmtLatency(heartbeat)}; ${fmtCodes(beatCodes)}; fleets' send lag p99 ${fmtMs(lag)} ms, their CPU ${fmtMs(withAgents.fleetsCpuMs / Math.max(1, heartbeat.samples))} ms a heartbeat`,
    );

    // 4. One provider's heartbeats all at once: its limit answers most of them.
    let floodOne: Calls | undefined;
    const one = await restPhase(`flood one ${opt.floodSeconds} s`, opt.floodSeconds, async () => {
      floodOne = await fleets?.one<Flooded>(0, {
        kind: 'flood-one',
        atMs: nowMs() + 1000,
        count: opt.flood,
      });
    });
    if (floodOne !== undefined) {
      console.log(
        `${pad('')}flood: ${opt.flood} heartbeats of one provider ${fmtLatency(latencyOf([floodOne]))}; ${fmtCodes(floodOne.codes)}`,
      );
    }

    // 5. Many clusters, one heartbeat each, at the same instant.
    let floodMany: Calls[] = [];
    const perFleet = shares(floodClusters, fleetsN, opt.agents);
    const many = await restPhase(`flood many ${opt.floodSeconds} s`, opt.floodSeconds, async () => {
      const atMs = nowMs() + 1000;
      floodMany =
        (await fleets?.all<Flooded>((k) => ({
          kind: 'flood-many',
          atMs,
          agents: perFleet[k] ?? 0,
        }))) ?? [];
    });
    const manyCodes = floodMany.reduce((c, f) => addCodes(c, f.codes), {} as Codes);
    console.log(
      `${pad('')}flood: one heartbeat of each of ${floodClusters} clusters ${fmtLatency(latencyOf(floodMany))}; ${fmtCodes(manyCodes)}`,
    );

    const last = await fleets.all<Collected>(() => ({
      kind: 'collect',
      fromMs: 0,
      toMs: Infinity,
    }));
    const scheduled = last.reduce((c, b) => addCodes(c, b.totalCodes), {} as Codes);
    console.log(
      `${pad('heartbeats')}every scheduled one of the run: ${fmtCodes(scheduled)}; ${fmtCpu(cpuStart, await cpu())} over the measured phases`,
    );
    await fleets.stop();
    fleets = undefined;
    if (logLines > 0) console.log(`  the exchange logged ${logLines} lines at warn or above`);

    const restResults = [warm, alone, withAgents, one, many];
    const errors =
      heartbeatErrors(attachCodes) +
      heartbeatErrors(scheduled) +
      heartbeatErrors(floodOne?.codes ?? {}) +
      heartbeatErrors(manyCodes) +
      restResults.reduce((n, r) => n + r.errors.total(), 0);
    const figures = {
      agents: opt.agents,
      heartbeatP50Ms: heartbeat.p50 / 1000,
      heartbeatP99Ms: heartbeat.p99 / 1000,
      restP99Ms: withAgents.latency.p99 / 1000,
      restAloneP99Ms: alone.latency.p99 / 1000,
      floodRestP99Ms: Math.max(one.latency.p99, many.latency.p99) / 1000,
      errors,
    };
    console.log(verdictLine(figures));
    console.log(summaryLine(figures));
  } catch (err) {
    console.error('bench: failed:', err);
    process.exitCode = 1;
  } finally {
    client?.close();
    await pool?.destroy().catch(() => undefined);
    await fleets?.stop();
    await exchange.stop();
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
}
