// The numberer of the accounts' events (issue 22, D35, migrations/0023,
// docs/api/account-events.md): a change queues its events as one row of
// account_event_batches, committed with it; this numbers them after the
// commit, in rounds of one statement each:
//
// - one numberer at a time, in any process: the statement takes a
//   transaction-level advisory lock first and does nothing without it (an
//   old owner still finishing a round, a new owner starting one);
// - it deletes the first queued rows in id order (a row it deleted is its
//   own: a concurrent delete skips it), numbers each account's events from
//   its counter in (row id, position in the row) order, inserts them into
//   account_events and advances account_event_heads, in its one
//   transaction: a number is used once, and the counter never runs ahead of
//   the events a reader can see;
// - a row committed after a higher id was numbered is taken by a later round;
// - it wakes when a batch that queued events commits (Market.onAccountEvents)
//   and polls every `idleMs` besides (events queued by another process, such
//   as a refreshed kubeconfig). A restart numbers what is still queued.
//
// The streams (account-streams.ts) and webhooks (webhooks/dispatcher.ts)
// learn of new events from account_event_heads, which only this advances.

import type { Database } from '../db/database.js';
import { Waker, runRounds } from '../events/waker.js';
import type { RoundTiming } from '../events/waker.js';
import type { Logger } from '../logger.js';

/** The advisory lock of the numberer (any constant; two numberers never run at once). */
export const LOCK_KEY = 0x67707578_0016;

/** One round: $1 rows at most. Returns the rows taken, and the accounts' new heads. */
const ROUND_SQL = `WITH lock AS MATERIALIZED (SELECT pg_try_advisory_xact_lock(${LOCK_KEY}) AS ok),
taken AS (
  DELETE FROM account_event_batches
   WHERE id IN (SELECT id FROM account_event_batches
                 WHERE (SELECT ok FROM lock) ORDER BY id LIMIT $1)
  RETURNING id, events),
ev AS (
  SELECT e.v->>'account_id' AS account_id,
         row_number() OVER (PARTITION BY e.v->>'account_id' ORDER BY t.id, e.ord) AS rank,
         e.v->>'event_id' AS event_id, e.v->>'kind' AS kind, e.v->'payload' AS payload,
         (e.v->>'created_ms')::bigint AS created_ms
    FROM taken t, json_array_elements(t.events) WITH ORDINALITY AS e(v, ord)),
counts AS (SELECT account_id, count(*) AS n FROM ev GROUP BY account_id),
heads AS (
  INSERT INTO account_event_heads (account_id, seq)
  SELECT account_id, n FROM counts ORDER BY account_id
  ON CONFLICT (account_id) DO UPDATE SET seq = account_event_heads.seq + EXCLUDED.seq
  RETURNING account_id, seq),
ins AS (
  INSERT INTO account_events (account_id, seq, event_id, kind, payload, created_ms)
  SELECT ev.account_id, h.seq - c.n + ev.rank, ev.event_id, ev.kind, ev.payload, ev.created_ms
    FROM ev JOIN counts c USING (account_id) JOIN heads h USING (account_id))
SELECT (SELECT count(*) FROM taken)::int AS taken,
       (SELECT json_agg(json_build_object('account_id', account_id, 'seq', seq)) FROM heads)::text
         AS heads`;

/** An account's last number after a round. */
export interface AccountHead {
  readonly account_id: string;
  readonly seq: number;
}

/** One round on `db`: the queued rows taken (0: none, or another numberer holds the lock). */
export async function numberRound(
  db: Database,
  limit = 200,
): Promise<{ taken: number; heads: AccountHead[] }> {
  const [row] = await db.query<{ taken: number; heads: string | null }>(ROUND_SQL, [limit], {
    name: 'gpux_number_account_events',
  });
  const heads =
    row?.heads === null || row === undefined ? [] : (JSON.parse(row.heads) as AccountHead[]);
  return { taken: row?.taken ?? 0, heads: heads.map((h) => ({ ...h, seq: Number(h.seq) })) };
}

/** Rounds until nothing is left that this numberer could take (tests; a close). */
export async function numberAll(db: Database): Promise<void> {
  while ((await numberRound(db)).taken > 0);
}

export interface NumbererOptions extends RoundTiming {
  readonly logger: Logger;
  /** Rows taken per round. */
  readonly batchSize?: number;
  /** After a round that numbered events: the accounts' new heads. */
  readonly onNumbered?: (heads: readonly AccountHead[]) => void;
}

export class AccountEventNumberer {
  private stopped = false;
  private readonly waker = new Waker();
  private loop: Promise<void> | undefined;

  constructor(
    private readonly db: Database,
    private readonly o: NumbererOptions,
  ) {}

  start(): void {
    this.loop ??= this.run();
  }

  /** Events were queued and committed: number them now. */
  wake(): void {
    this.waker.wake();
  }

  /** Stop after the round in flight; what is still queued waits for the next start. */
  async close(): Promise<void> {
    this.stopped = true;
    this.waker.wake();
    await this.loop;
  }

  private run(): Promise<void> {
    const limit = this.o.batchSize ?? 200;
    return runRounds(
      this.waker,
      this.o,
      async () => {
        const { taken, heads } = await numberRound(this.db, limit);
        if (heads.length > 0) this.o.onNumbered?.(heads);
        return taken === limit;
      },
      (err, retryInMs) =>
        this.o.logger.warn(
          { err, retryInMs },
          'numbering accounts’ events failed; they stay queued and are tried again',
        ),
      () => this.stopped,
      10,
    );
  }
}
