// One fleet of simulated agents for `npm run bench -- agents`, as a child
// process of the bench (agents-fleets.ts forks it; one Node process cannot
// drive 5,000 connections at rate beside the bench's REST load). Each agent
// is what a real agent is to the exchange: an HTTP/2 connection of its own
// to the gRPC service, its provider's token, a cluster of 2 nodes, an
// Attach, then a heartbeat with both nodes' 8 GPUs every declared interval.
// Its calls go through the bench's lean gRPC client (grpc-client.ts), not
// grpc-js, whose CPU per call took from what the bench measures; each
// agent's heartbeat is encoded once. Commands and answers go over
// the fork IPC channel (FleetRequest → FleetReply). Timestamps are
// performance.timeOrigin-based epoch ms, comparable across processes.

import { status } from '@grpc/grpc-js';
import { AgentServiceService } from '@gpux/proto';
import type { Gpu, NodeHealth } from '@gpux/proto';

import { LeanGrpcClient } from './grpc-client.js';
import type { PreparedCall } from './grpc-client.js';

export interface FleetAgent {
  readonly token: string;
  readonly clusterId: string;
  readonly hostnames: readonly string[];
}

export type FleetRequest =
  | {
      readonly kind: 'attach';
      readonly target: string;
      readonly agents: readonly FleetAgent[];
      readonly intervalSeconds: number;
      /** This fleet's first agent's number among all, and how many there are (heartbeat phases). */
      readonly firstIndex: number;
      readonly total: number;
      /**
       * Each agent heartbeats from its attach on, as a real one does, in its
       * slot: agent k of all at epochMs + k / total of an interval, and every
       * interval after, so the heartbeats are spread evenly.
       */
      readonly epochMs: number;
    }
  /**
   * The scheduled heartbeats sent in [fromMs, toMs), once every one of them
   * has answered (at most the call deadline); older records are dropped.
   */
  | { readonly kind: 'collect'; readonly fromMs: number; readonly toMs: number }
  /** The fleet's first agent sends `count` heartbeats at once at `atMs`. */
  | { readonly kind: 'flood-one'; readonly atMs: number; readonly count: number }
  /** The fleet's first `agents` agents send one heartbeat each at `atMs`. */
  | { readonly kind: 'flood-many'; readonly atMs: number; readonly agents: number }
  | { readonly kind: 'stop' };

/** gRPC status names → how many calls ended so. */
export type Codes = Record<string, number>;

export interface Calls {
  readonly latenciesMs: number[];
  readonly codes: Codes;
}

export type FleetAnswer =
  | { readonly kind: 'attached'; readonly codes: Codes }
  | (Calls & {
      readonly kind: 'collected';
      /** Every scheduled heartbeat since start, by code. */
      readonly totalCodes: Codes;
      /** Actual − scheduled send time, p99 of the window (the fleet's own lag). */
      readonly lagP99Ms: number;
    })
  | (Calls & { readonly kind: 'flooded' })
  | { readonly kind: 'stopped' };

export type FleetReply =
  | { readonly id: number; readonly ok: true; readonly answer: FleetAnswer }
  | { readonly id: number; readonly ok: false; readonly error: string };

/** A call that takes longer is DEADLINE_EXCEEDED (an error of the bench's count). */
const DEADLINE_MS = 30_000;
/** Attaches in flight per fleet. */
const ATTACH_CONCURRENCY = 32;
const GPUS_PER_NODE = 8;

const nowMs = (): number => performance.timeOrigin + performance.now();

/** A hex string of `n` digits from a number (deterministic GPU UUIDs). */
function hex(seed: number, n: number): string {
  let out = '';
  let x = seed >>> 0 || 1;
  while (out.length < n) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    out += (x >>> 0).toString(16).padStart(8, '0');
  }
  return out.slice(0, n);
}

/** Both nodes of an agent's cluster, 8 H100s each, as nvidia-smi reports them. */
export function inventory(agentIndex: number, hostnames: readonly string[]): NodeHealth[] {
  return hostnames.map((hostname, n) => ({
    hostname,
    healthy: true,
    problem: '',
    gpus: Array.from({ length: GPUS_PER_NODE }, (_, index): Gpu => {
      const h = hex(agentIndex * 64 + n * GPUS_PER_NODE + index + 1, 32);
      return {
        index,
        name: 'NVIDIA H100 80GB HBM3',
        uuid: `GPU-${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`,
        memoryTotalMib: 81_559,
        utilizationPercent: (agentIndex * 7 + index * 13) % 101,
        temperatureC: 30 + ((agentIndex + index * 3) % 50),
      };
    }),
  }));
}

const { attach: ATTACH, heartbeat: HEARTBEAT } = AgentServiceService;

class SimAgent {
  private readonly client: LeanGrpcClient;
  /** Its heartbeat: the same content every time, so encoded once. */
  private readonly beat: PreparedCall;

  constructor(
    target: string,
    readonly a: FleetAgent,
    index: number,
  ) {
    this.client = new LeanGrpcClient({ target, deadlineMs: DEADLINE_MS });
    const request = { clusterId: a.clusterId, nodes: inventory(index, a.hostnames) };
    this.beat = this.client.prepare(HEARTBEAT.path, HEARTBEAT.requestSerialize(request), a.token);
  }

  async attach(intervalSeconds: number): Promise<string> {
    const request = ATTACH.requestSerialize({
      clusterId: this.a.clusterId,
      heartbeatIntervalSeconds: intervalSeconds,
      agentVersion: 'bench-agents',
      provisioner: 'simulated',
      host: {
        hostname: this.a.hostnames[0] ?? 'host',
        os: 'Ubuntu 22.04.4 LTS',
        cpuModel: 'AMD EPYC 9454 48-Core Processor',
        cpuCores: 96,
        memoryMib: 1_547_000,
      },
    });
    const answer = await this.client.call(this.client.prepare(ATTACH.path, request, this.a.token));
    return codeName(answer.code);
  }

  /** One heartbeat; resolves with its gRPC status name and latency. */
  async heartbeat(): Promise<{ code: string; ms: number }> {
    const t0 = performance.now();
    const answer = await this.client.call(this.beat);
    return { code: codeName(answer.code), ms: performance.now() - t0 };
  }

  close(): void {
    this.client.close();
  }
}

function codeName(code: status): string {
  return status[code] ?? String(code);
}

function count(codes: Codes, code: string): void {
  codes[code] = (codes[code] ?? 0) + 1;
}

function p99(values: number[]): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil(0.99 * sorted.length) - 1)] ?? NaN;
}

/** A scheduled heartbeat that has answered. */
interface Beat {
  /** Sent at (epoch ms). */
  readonly sent: number;
  readonly ms: number;
  readonly code: string;
  /** Sent − due: the fleet's own lag. */
  readonly lag: number;
}

/** The fleet's state in this process. */
class Fleet {
  private agents: SimAgent[] = [];
  private readonly timers: NodeJS.Timeout[] = [];
  private beats: Beat[] = [];
  /** Scheduled heartbeats not answered yet, by send time. */
  private readonly pending = new Set<{ sent: number; answered: Promise<void> }>();
  private readonly totalCodes: Codes = {};

  async handle(r: FleetRequest): Promise<FleetAnswer> {
    switch (r.kind) {
      case 'attach':
        return this.attach(r);
      case 'collect':
        return this.collect(r.fromMs, r.toMs);
      case 'flood-one':
        return this.flood(r.atMs, () => {
          const agent = this.agents[0];
          return agent === undefined ? [] : Array.from({ length: r.count }, () => agent);
        });
      case 'flood-many':
        return this.flood(r.atMs, () => this.agents.slice(0, r.agents));
      case 'stop':
        for (const t of this.timers) clearTimeout(t);
        for (const a of this.agents) a.close();
        return { kind: 'stopped' };
    }
  }

  private async attach(r: Extract<FleetRequest, { kind: 'attach' }>): Promise<FleetAnswer> {
    const intervalMs = r.intervalSeconds * 1000;
    this.agents = r.agents.map((a, k) => new SimAgent(r.target, a, r.firstIndex + k));
    const codes: Codes = {};
    let next = 0;
    const worker = async (): Promise<void> => {
      while (next < this.agents.length) {
        const k = next++;
        const agent = this.agents[k];
        if (agent === undefined) continue;
        const code = await agent.attach(r.intervalSeconds);
        count(codes, code);
        const slot = r.epochMs + ((r.firstIndex + k) / r.total) * intervalMs;
        if (code === 'OK') this.heartbeatFrom(k, agent, slot, intervalMs);
      }
    };
    await Promise.all(Array.from({ length: ATTACH_CONCURRENCY }, worker));
    return { kind: 'attached', codes };
  }

  /** Agent k heartbeats at `slot` + a whole number of intervals, from the next one on. */
  private heartbeatFrom(k: number, agent: SimAgent, slot: number, intervalMs: number): void {
    let due = slot + Math.max(0, Math.ceil((nowMs() - slot) / intervalMs)) * intervalMs;
    const beat = (): void => {
      const sent = nowMs();
      const lag = sent - due;
      due += intervalMs;
      this.timers[k] = setTimeout(beat, Math.max(0, due - nowMs()));
      const entry = {
        sent,
        answered: agent.heartbeat().then(({ code, ms }) => {
          this.pending.delete(entry);
          this.beats.push({ sent, ms, code, lag });
          count(this.totalCodes, code);
        }),
      };
      this.pending.add(entry);
    };
    this.timers[k] = setTimeout(beat, Math.max(0, due - nowMs()));
  }

  private async collect(fromMs: number, toMs: number): Promise<FleetAnswer> {
    // A slow answer is the figure: wait for every heartbeat of the window (at most the deadline).
    await Promise.all([...this.pending].filter((p) => p.sent < toMs).map((p) => p.answered));
    const inWindow = this.beats.filter((b) => b.sent >= fromMs && b.sent < toMs);
    this.beats = this.beats.filter((b) => b.sent >= toMs);
    const codes: Codes = {};
    for (const b of inWindow) count(codes, b.code);
    return {
      kind: 'collected',
      latenciesMs: inWindow.map((b) => b.ms),
      codes,
      totalCodes: { ...this.totalCodes },
      lagP99Ms: p99(inWindow.map((b) => b.lag)),
    };
  }

  private async flood(atMs: number, senders: () => SimAgent[]): Promise<FleetAnswer> {
    const who = senders();
    await new Promise((r) => setTimeout(r, Math.max(0, atMs - nowMs())));
    const results = await Promise.all(who.map((a) => a.heartbeat()));
    const codes: Codes = {};
    for (const r of results) count(codes, r.code);
    return { kind: 'flooded', latenciesMs: results.map((r) => r.ms), codes };
  }
}

// Run as a forked child: answer the parent's requests, in order of arrival.
if (process.send !== undefined && process.argv.includes('--agents-fleet')) {
  const fleet = new Fleet();
  const reply = (m: FleetReply): void => {
    process.send?.(m);
  };
  process.on('message', (m: { id: number; request: FleetRequest }) => {
    fleet.handle(m.request).then(
      (answer) => {
        reply({ id: m.id, ok: true, answer });
        if (answer.kind === 'stopped') setImmediate(() => process.disconnect());
      },
      (err: unknown) => reply({ id: m.id, ok: false, error: String(err) }),
    );
  });
  // The bench is gone: so is the fleet.
  process.on('disconnect', () => process.exit(0));
}
