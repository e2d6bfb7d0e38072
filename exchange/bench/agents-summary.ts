// The figures `npm run bench -- agents` ends with: the verdict against the
// issue's targets (issue 18) and the last line, in a fixed form other tools
// may parse:
//
//   agents: n=<N> heartbeat p50 <a> ms p99 <b> ms | rest p99 <c> ms (alone <d> ms) | flood rest p99 <e> ms | errors <k>

export interface AgentsFigures {
  readonly agents: number;
  /** Heartbeats of the measured phase with agents. */
  readonly heartbeatP50Ms: number;
  readonly heartbeatP99Ms: number;
  /** REST p99 beside the agents, and with no agent attached. */
  readonly restP99Ms: number;
  readonly restAloneP99Ms: number;
  /** REST p99 of the worse flood phase. */
  readonly floodRestP99Ms: number;
  /** Heartbeats answered other than OK or RESOURCE_EXHAUSTED, REST 5xx and transport failures. */
  readonly errors: number;
}

export const AGENTS_TARGETS = {
  heartbeatP99Ms: 50,
  /** REST p99 with agents ≤ factor × alone + slack. */
  restFactor: 2,
  restSlackMs: 5,
  floodRestP99Ms: 100,
} as const;

/** Milliseconds: two decimals below 10, one below 100, whole above. */
export function fmtMs(ms: number): string {
  if (!Number.isFinite(ms)) return String(ms);
  return ms >= 100 ? ms.toFixed(0) : ms >= 10 ? ms.toFixed(1) : ms.toFixed(2);
}

export function summaryLine(f: AgentsFigures): string {
  return (
    `agents: n=${f.agents} heartbeat p50 ${fmtMs(f.heartbeatP50Ms)} ms p99 ${fmtMs(f.heartbeatP99Ms)} ms` +
    ` | rest p99 ${fmtMs(f.restP99Ms)} ms (alone ${fmtMs(f.restAloneP99Ms)} ms)` +
    ` | flood rest p99 ${fmtMs(f.floodRestP99Ms)} ms | errors ${f.errors}`
  );
}

/** REST p99 allowed beside the agents, from the p99 alone. */
export function restBoundMs(aloneP99Ms: number): number {
  return AGENTS_TARGETS.restFactor * aloneP99Ms + AGENTS_TARGETS.restSlackMs;
}

/** Whether each target is met (a NaN figure meets none). */
export function targetsMet(f: AgentsFigures): {
  heartbeat: boolean;
  rest: boolean;
  flood: boolean;
  errors: boolean;
} {
  return {
    heartbeat: f.heartbeatP99Ms <= AGENTS_TARGETS.heartbeatP99Ms,
    rest: f.restP99Ms <= restBoundMs(f.restAloneP99Ms),
    flood: f.floodRestP99Ms <= AGENTS_TARGETS.floodRestP99Ms,
    errors: f.errors === 0,
  };
}

export function verdictLine(f: AgentsFigures): string {
  const met = targetsMet(f);
  const v = (ok: boolean): string => (ok ? 'met' : 'NOT met');
  return (
    `targets: heartbeat p99 ≤ ${AGENTS_TARGETS.heartbeatP99Ms} ms ${v(met.heartbeat)} (${fmtMs(f.heartbeatP99Ms)} ms)` +
    `; rest p99 with agents ≤ ${AGENTS_TARGETS.restFactor} × alone + ${AGENTS_TARGETS.restSlackMs} ms = ${fmtMs(restBoundMs(f.restAloneP99Ms))} ms ${v(met.rest)} (${fmtMs(f.restP99Ms)} ms)` +
    `; flood rest p99 ≤ ${AGENTS_TARGETS.floodRestP99Ms} ms ${v(met.flood)} (${fmtMs(f.floodRestP99Ms)} ms)` +
    `; errors 0 ${v(met.errors)} (${f.errors})`
  );
}
