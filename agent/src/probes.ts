// The agent's probes (issue 23), served beside GET /metrics on
// GPUX_METRICS_LISTEN (metrics.ts), shaped as the exchange's
// (exchange/src/routes/service.ts):
//
//   GET /healthz  200 {"status":"ok"} while the process answers (also while
//                 it drains: a liveness probe must not kill a drain)
//   GET /readyz   200 {"status":"ready","phase":"running","checks":{…}} when
//                 the agent is attached to the exchange (its last heartbeat
//                 answered), consumes its lease events (NATS connected, its
//                 consumer there) and its provisioner answers (the nodes'
//                 health could be read); otherwise 503 with the error
//                 envelope of the API (D19, code `unavailable`) naming what is
//                 not ready, in `checks` and in the message. Before the first
//                 Attach, and from SIGTERM on (draining), it is 503.

import type { AgentPhase } from './agent-status.js';

/** Each check: `ok`, or why not. */
export interface ReadinessChecks {
  /** Attached, and the last heartbeat was answered. */
  readonly exchange: string;
  /** Consuming the cluster's lease events: NATS connected, the consumer there. */
  readonly events: string;
  /** The provisioner answered the last heartbeat's health read. */
  readonly provisioner: string;
}

export interface Readiness {
  readonly phase: AgentPhase;
  readonly checks: ReadinessChecks;
}

export const OK = 'ok';

export function isReady(r: Readiness): boolean {
  return r.phase === 'running' && Object.values(r.checks).every((c) => c === OK);
}

/** Why the agent is not ready, in a sentence (the 503's message). */
export function notReadyMessage(r: Readiness): string {
  const parts: string[] = [];
  if (r.phase === 'draining' || r.phase === 'stopped')
    parts.push('draining: the agent is stopping (SIGTERM)');
  else if (r.phase === 'failed') parts.push('the agent failed');
  else if (r.phase === 'attaching') parts.push('starting: not attached and consuming yet');
  for (const [name, c] of Object.entries(r.checks)) if (c !== OK) parts.push(`${name}: ${c}`);
  return `not ready: ${parts.join('; ')}`;
}

export interface ProbeAnswer {
  readonly status: number;
  readonly body: string;
}

/** The answer to GET `path`, or undefined when `path` is not a probe. */
export function probeAnswer(path: string, readiness: () => Readiness): ProbeAnswer | undefined {
  if (path === '/healthz') return { status: 200, body: JSON.stringify({ status: 'ok' }) };
  if (path !== '/readyz') return undefined;
  const r = readiness();
  if (isReady(r)) {
    return {
      status: 200,
      body: JSON.stringify({ status: 'ready', phase: r.phase, checks: r.checks }),
    };
  }
  return {
    status: 503,
    body: JSON.stringify({
      data: null,
      error: {
        code: 'unavailable',
        message: notReadyMessage(r),
        phase: r.phase,
        checks: r.checks,
      },
    }),
  };
}
