// The arguments of `npm run bench -- agents` (agents-bench.ts), parsed into
// a checked set of options or one line saying what is wrong.

export interface AgentsOptions {
  /** Simulated agents: a provider account, a cluster of 2 nodes and a gRPC channel each. */
  readonly agents: number;
  /** Length of each measured REST phase (alone, with agents), s. */
  readonly seconds: number;
  /** REST requests per second (book reads, estimates, orders). */
  readonly rate: number;
  /** The heartbeat interval each agent declares at Attach and keeps, s. */
  readonly interval: number;
  /** Heartbeats of the one-provider flood, and clusters of the many-clusters flood. */
  readonly flood: number;
  /** Length of each flood phase's REST measurement, s (the flood goes 1 s in). */
  readonly floodSeconds: number;
  /** Processes the agents are spread over; 0: one per 1,000 agents. */
  readonly fleets: number;
  /** Keep-alive connections of the REST load. */
  readonly connections: number;
  readonly seed: number;
}

export const AGENTS_USAGE =
  'usage: npm run bench -- agents [--agents N] [--seconds S] [--rate R] [--interval I] [--flood F] [--flood-seconds S] [--fleets P] [--connections C] [--seed S]';

export const AGENTS_DEFAULTS: AgentsOptions = {
  agents: 5_000,
  seconds: 20,
  rate: 200,
  interval: 5,
  flood: 2_000,
  floodSeconds: 6,
  fleets: 0,
  connections: 16,
  seed: 20261122,
};

/** Agents one fleet process drives when --fleets is not given. */
export const AGENTS_PER_FLEET = 1_000;

export class AgentsUsageError extends Error {
  override readonly name = 'AgentsUsageError';
}

/** Every option is a number. */
type Numeric = keyof AgentsOptions;

const FLAGS: Readonly<Record<string, { key: Numeric; min: number; max: number; whole: boolean }>> =
  {
    '--agents': { key: 'agents', min: 1, max: 20_000, whole: true },
    '--seconds': { key: 'seconds', min: 1, max: 3_600, whole: false },
    '--rate': { key: 'rate', min: 1, max: 10_000, whole: false },
    // The exchange takes declared intervals of 1 to 300 s (D29).
    '--interval': { key: 'interval', min: 1, max: 300, whole: true },
    '--flood': { key: 'flood', min: 1, max: 20_000, whole: true },
    '--flood-seconds': { key: 'floodSeconds', min: 2, max: 600, whole: false },
    '--fleets': { key: 'fleets', min: 0, max: 64, whole: true },
    '--connections': { key: 'connections', min: 1, max: 1_000, whole: true },
    '--seed': { key: 'seed', min: 0, max: 2 ** 32 - 1, whole: true },
  };

/**
 * Parses the words after `npm run bench --` (the suite's name `agents` is
 * skipped); `--flag value` or `--flag=value`. Throws AgentsUsageError.
 */
export function parseAgentsArgs(argv: readonly string[]): AgentsOptions | 'help' {
  const o: Record<Numeric, number> = { ...AGENTS_DEFAULTS };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i] ?? '';
    if (a === 'agents') continue;
    if (a === '-h' || a === '--help') return 'help';
    const [flag = '', inline] = a.includes('=') ? a.split('=', 2) : [a, undefined];
    const spec = FLAGS[flag];
    if (spec === undefined) throw new AgentsUsageError(`unknown argument ${a}`);
    const raw = inline ?? argv[++i];
    const n = Number(raw);
    if (
      raw === undefined ||
      raw.trim() === '' ||
      !Number.isFinite(n) ||
      (spec.whole && !Number.isSafeInteger(n)) ||
      n < spec.min ||
      n > spec.max
    ) {
      throw new AgentsUsageError(
        `${flag}: expected a ${spec.whole ? 'whole ' : ''}number from ${spec.min} to ${spec.max}, got ${raw ?? 'nothing'}`,
      );
    }
    o[spec.key] = n;
  }
  return o;
}

/** How many processes drive the agents: --fleets, or one per AGENTS_PER_FLEET. */
export function fleetCount(o: AgentsOptions): number {
  const wanted = o.fleets > 0 ? o.fleets : Math.ceil(o.agents / AGENTS_PER_FLEET);
  return Math.max(1, Math.min(wanted, o.agents));
}

/** Agents [from, to) of fleet k of `fleets`, out of `n`. */
export function sliceOf(k: number, fleets: number, n: number): { from: number; to: number } {
  return { from: Math.floor((k * n) / fleets), to: Math.floor(((k + 1) * n) / fleets) };
}

/** The first `total` of the fleets' agents, spread over the fleets in proportion to their size. */
export function shares(total: number, fleets: number, n: number): number[] {
  const out: number[] = [];
  let given = 0;
  for (let k = 0; k < fleets; k++) {
    const { from, to } = sliceOf(k, fleets, n);
    const upTo = Math.round((total * to) / n);
    out.push(Math.min(to - from, upTo - given));
    given += out[k] ?? 0;
  }
  return out;
}
