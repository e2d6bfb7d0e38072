// What the exchange forgets, and when (docs/operations.md, "What is kept"):
// Idempotency-Keys past their 24 h (D23) and outbox rows published longer
// ago than GPUX_OUTBOX_RETENTION_HOURS. An unpublished outbox row is never
// deleted: it is an event no agent has heard yet. Accounts' own events
// (GET /v1/account/stream, issue 22) older than
// GPUX_ACCOUNT_EVENT_RETENTION_HOURS, and webhook deliveries finished as
// long ago. Run by the market's owner
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
  /** How long an account's event is kept (docs/api/account-events.md). */
  readonly accountEventRetentionMs: number;
}

export interface Forgotten {
  readonly idempotencyKeys: number;
  readonly outboxRows: number;
  readonly accountEvents: number;
  readonly webhookDeliveries: number;
}

/** Runs `deleteSql` (a DELETE of at most BATCH rows, counting them as n) until it deletes fewer. */
async function inBatches(db: Queryable, deleteSql: string, before: number): Promise<number> {
  let total = 0;
  for (;;) {
    const [batch] = await db.query<{ n: number }>(
      `WITH gone AS (${deleteSql} RETURNING 1) SELECT count(*)::int AS n FROM gone`,
      [before],
    );
    const n = batch?.n ?? 0;
    total += n;
    if (n < BATCH) return total;
  }
}

/** Deletes published outbox rows published at or before `before`; the count. */
export function pruneOutbox(db: Queryable, before: number): Promise<number> {
  // Oldest first along the primary key: the published rows are the outbox's
  // prefix (the relay publishes in seq order), so each batch is found at its start.
  return inBatches(
    db,
    `DELETE FROM outbox WHERE seq IN (
       SELECT seq FROM outbox
        WHERE published_ms IS NOT NULL AND published_ms <= $1
        ORDER BY seq LIMIT ${BATCH})`,
    before,
  );
}

/** Deletes accounts' events written at or before `before`, oldest first; the count. */
export function pruneAccountEvents(db: Queryable, before: number): Promise<number> {
  return inBatches(
    db,
    `DELETE FROM account_events WHERE (account_id, seq) IN (
       SELECT account_id, seq FROM account_events
        WHERE created_ms <= $1 ORDER BY created_ms LIMIT ${BATCH})`,
    before,
  );
}

/** Deletes webhook deliveries finished at or before `before` (their attempts go with them). */
export function pruneWebhookDeliveries(db: Queryable, before: number): Promise<number> {
  return inBatches(
    db,
    `DELETE FROM webhook_deliveries WHERE id IN (
       SELECT id FROM webhook_deliveries
        WHERE status <> 'pending' AND finished_ms <= $1 LIMIT ${BATCH})`,
    before,
  );
}

/** One round: forget what is past its life at `now`. */
export async function forgetExpired(
  db: Queryable,
  now: number,
  o: RetentionOptions,
): Promise<Forgotten> {
  const idempotencyKeys = await purgeIdempotencyKeys(db, now);
  const outboxRows = await pruneOutbox(db, now - o.outboxRetentionMs);
  const accountEvents = await pruneAccountEvents(db, now - o.accountEventRetentionMs);
  const webhookDeliveries = await pruneWebhookDeliveries(db, now - o.accountEventRetentionMs);
  return { idempotencyKeys, outboxRows, accountEvents, webhookDeliveries };
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
        const n =
          forgotten.idempotencyKeys +
          forgotten.outboxRows +
          forgotten.accountEvents +
          forgotten.webhookDeliveries;
        if (n > 0) logger.info(forgotten, 'forgot expired Idempotency-Keys and events');
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
