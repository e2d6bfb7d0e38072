// GET /readyz's answer (issue 23; docs/ownership.md, docs/runbooks.md),
// shaped as the agent's (agent/src/probes.ts): ready only when
//
//   market    this process owns the market, its books rebuilt (the steward
//             serves only once the owned part has started);
//   database  the database answers a `SELECT 1` (db/database-probe.ts:
//             short timeout, its answer kept a second);
//   events    the event bus takes events: the NATS JetStream connection is
//             up (JetStreamPublisher.problem), or the in-process bus of
//             `npm start` (always);
//
// and the process is not draining (D34: from SIGTERM on, before it lets go
// of the market). 200 {"status":"ready","role":"owner","phase":"serving",
// "checks":{…}}; otherwise 503 `unavailable` in the error envelope (D19)
// with `phase` and `checks` beside the message, which names what failed.

import { GpuxError } from '@gpux/shared';
import { Type } from '@sinclair/typebox';

import { DatabaseProbe, OK } from '../db/database-probe.js';
import type { Queryable } from '../db/database.js';
import type { RouteContext } from '../services.js';

/** What /readyz asks beyond the route context (server.ts wires them). */
export interface ReadinessSources {
  /** Where the probe's `SELECT 1` goes (the ownership's own connection on PostgreSQL). */
  readonly database: Queryable;
  /** Why events cannot be published now; undefined: they can. */
  events(): string | undefined;
}

export type Phase = 'serving' | 'standby' | 'draining';

export interface ReadinessChecks {
  readonly market: string;
  readonly database: string;
  readonly events: string;
}

const Check = (description: string) =>
  Type.String({ description: `\`ok\`, or why not: ${description}` });

export const Checks = Type.Object(
  {
    market: Check('this process owns the market and its books are loaded'),
    database: Check('the database answered `SELECT 1` (answer kept for a second)'),
    events: Check('the event bus (NATS JetStream, or the in-process bus) takes events'),
  },
  { title: 'ReadinessChecks' },
);

export const Ready = Type.Object(
  {
    status: Type.Literal('ready'),
    role: Type.Literal('owner', { description: 'This process owns the market and writes it.' }),
    phase: Type.Literal('serving'),
    checks: Checks,
  },
  { title: 'Ready' },
);

export const STANDING_BY =
  'standing by: another exchange process owns the market (docs/ownership.md)';

/** Answers GET /readyz for one app; the database probe is made at the first request. */
export class Readiness {
  private probe: DatabaseProbe | undefined;

  constructor(
    private readonly ctx: RouteContext,
    private readonly draining: () => boolean,
  ) {}

  async answer(): Promise<{
    status: 'ready';
    role: 'owner';
    phase: 'serving';
    checks: ReadinessChecks;
  }> {
    const phase: Phase = this.draining()
      ? 'draining'
      : this.ctx.serving === undefined || this.ctx.serving()
        ? 'serving'
        : 'standby';
    this.probe ??= new DatabaseProbe(this.ctx.readiness?.database ?? this.ctx.db);
    const database = await this.probe.check();
    const checks: ReadinessChecks = {
      market: phase === 'standby' ? STANDING_BY : OK,
      database,
      events:
        phase === 'standby'
          ? 'not publishing: only the owner of the market publishes events'
          : (this.ctx.readiness?.events() ?? OK),
    };
    if (phase === 'serving' && Object.values(checks).every((c) => c === OK))
      return { status: 'ready', role: 'owner', phase, checks };
    throw new GpuxError('unavailable', notReadyMessage(phase, checks), {
      details: { phase, checks },
    });
  }
}

/** Why the exchange is not ready, in a sentence (the 503's message). */
export function notReadyMessage(phase: Phase, checks: ReadinessChecks): string {
  const parts: string[] = [];
  if (phase === 'draining')
    parts.push('draining: the exchange is shutting down (SIGTERM) and will hand the market over');
  for (const [name, c] of Object.entries(checks)) if (c !== OK) parts.push(`${name}: ${c}`);
  return `not ready: ${parts.join('; ')}`;
}
