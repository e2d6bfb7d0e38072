// What the exchange forgets, and when (docs/operations.md, "What is kept"):
// Idempotency-Keys past their 24 h (D23) and outbox rows published longer
// ago than GPUX_OUTBOX_RETENTION_HOURS. An unpublished outbox row is never
// deleted: it is an event no agent has heard yet. Run by the market's owner
// at once when it takes the market, then every hour, so a restart does not
// put the purge off.

import { purgeIdempotencyKeys } from './auth/idempotency.js';
import type { Queryable } from './db/database.js';
import type { Logger } from './logger.js';

/** Rows deleted per statement, so one purge never holds a long lock. */
const BATCH = 5_000;

export interface RetentionOptions {
  /** How long a published outbox row is kept. */
  readonly outboxRetentionMs: number;
}

export interface Forgotten {
  readonly idempotencyKeys: number;
  readonly outboxRows: number;
}

/** Deletes published outbox rows published at or before `before`; the count. */
export async function pruneOutbox(db: Queryable, before: number): Promise<number> {
  let total = 0;
  for (;;) {
    // Oldest first along the primary key: the published rows are the outbox's
    // prefix (the relay publishes in seq order), so each batch is found at its start.
    const [batch] = await db.query<{ n: number }>(
      `WITH gone AS (
         DELETE FROM outbox WHERE seq IN (
           SELECT seq FROM outbox
            WHERE published_ms IS NOT NULL AND published_ms <= $1
            ORDER BY seq LIMIT ${BATCH})
         RETURNING 1)
       SELECT count(*)::int AS n FROM gone`,
      [before],
    );
    const n = batch?.n ?? 0;
    total += n;
    if (n < BATCH) return total;
  }
}

/** One round: forget what is past its life at `now`. */
export async function forgetExpired(
  db: Queryable,
  now: number,
  o: RetentionOptions,
): Promise<Forgotten> {
  const idempotencyKeys = await purgeIdempotencyKeys(db, now);
  const outboxRows = await pruneOutbox(db, now - o.outboxRetentionMs);
  return { idempotencyKeys, outboxRows };
}

/** A round now, then every `everyMs` (default an hour); returns the stop. */
export function startRetention(
  db: Queryable,
  logger: Logger,
  o: RetentionOptions,
  everyMs = 3_600_000,
  now: () => number = Date.now,
): () => void {
  let stopped = false;
  const round = (): void => {
    forgetExpired(db, now(), o).then(
      (forgotten) => {
        if (forgotten.idempotencyKeys + forgotten.outboxRows > 0)
          logger.info(forgotten, 'forgot expired Idempotency-Keys and published events');
      },
      (err: unknown) => {
        if (!stopped) logger.warn({ err }, 'forgetting expired rows failed; next try in an hour');
      },
    );
  };
  round();
  const timer = setInterval(round, everyMs);
  timer.unref();
  return () => {
    stopped = true;
    clearInterval(timer);
  };
}
