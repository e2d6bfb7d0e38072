// The numberer of the accounts' events (numberer.ts, migrations/0023): events
// queued by concurrent writers, each committing its changes one after the
// other, come out numbered 1…n per account with no gap and no number twice,
// each writer's events of an account in the order it committed them, none
// lost when the numberer stops and another starts, and two numberers at once
// (an old owner and a new one) still number each event once.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import type { Database } from '../db/database.js';
import { migrate } from '../db/migrate.js';
import { freshPostgres } from '../db/testing/fresh-database.js';
import type { FreshDatabase } from '../db/testing/fresh-database.js';
import { SILENT_LOGGER } from '../logger.js';
import { accountEvent, appendAccountEvents } from './events.js';
import { AccountEventNumberer, numberAll } from './numberer.js';

let fresh: FreshDatabase;
let db: Database;

beforeAll(async () => {
  fresh = await freshPostgres();
  db = fresh.db;
  await migrate(db);
});

afterAll(async () => {
  await fresh.drop();
});

/** `writers` writers, each committing `commits` changes in turn; each change has events of both accounts. */
async function write(accounts: readonly string[], writers: number, commits: number): Promise<void> {
  await Promise.all(
    Array.from({ length: writers }, async (_, w) => {
      for (let i = 0; i < commits; i++) {
        await db.transaction(async (tx) => {
          await appendAccountEvents(
            tx,
            accounts.flatMap((a) => [
              accountEvent(a, 'order.filled', { w, i, part: 0 }, i),
              accountEvent(a, 'transaction.posted', { w, i, part: 1 }, i),
            ]),
          );
        });
      }
    }),
  );
}

interface Stored {
  seq: number;
  event_id: string;
  payload: { w: number; i: number; part: number };
}

async function eventsOf(account: string): Promise<Stored[]> {
  return db.query<Stored>(
    'SELECT seq, event_id, payload FROM account_events WHERE account_id = $1 ORDER BY seq',
    [account],
  );
}

async function queuedRows(): Promise<number> {
  const [row] = await db.query<{ n: number }>(
    'SELECT count(*)::int AS n FROM account_event_batches',
  );
  return row?.n ?? 0;
}

/** Every event of `account` once, numbered 1…n, each writer's in the order it committed them. */
async function expectNumbered(account: string, writers: number, commits: number): Promise<void> {
  const rows = await eventsOf(account);
  expect(rows.map((r) => r.seq)).toEqual(
    Array.from({ length: writers * commits * 2 }, (_, i) => i + 1),
  );
  expect(new Set(rows.map((r) => r.event_id)).size).toBe(rows.length);
  const [head] = await db.query<{ seq: number }>(
    'SELECT seq FROM account_event_heads WHERE account_id = $1',
    [account],
  );
  expect(Number(head?.seq)).toBe(rows.length);
  for (let w = 0; w < writers; w++) {
    const mine = rows.filter((r) => r.payload.w === w).map((r) => [r.payload.i, r.payload.part]);
    expect(mine).toEqual(
      Array.from({ length: commits }, (_, i) => [
        [i, 0],
        [i, 1],
      ]).flat(),
    );
  }
}

/** Waits until nothing is queued (the numberers run by themselves). */
async function drained(): Promise<void> {
  while ((await queuedRows()) > 0) await new Promise((r) => setTimeout(r, 10));
}

describe('the numberer of accounts’ events', () => {
  it('numbers events of concurrent writers contiguously per account, in each writer’s commit order', async () => {
    const accounts = ['acc_n1_a', 'acc_n1_b'];
    const numberer = new AccountEventNumberer(db, { logger: SILENT_LOGGER, batchSize: 3 });
    numberer.start();
    // Woken while the writers commit, as a batch's commit wakes it.
    const waking = setInterval(() => numberer.wake(), 1);
    try {
      await write(accounts, 4, 10);
    } finally {
      clearInterval(waking);
    }
    await drained();
    await numberer.close();
    for (const a of accounts) await expectNumbered(a, 4, 10);
  });

  it('loses none across a restart of the numberer, and two at once number each event once', async () => {
    const accounts = ['acc_n2_a', 'acc_n2_b', 'acc_n2_c'];
    const first = new AccountEventNumberer(db, { logger: SILENT_LOGGER, batchSize: 2 });
    first.start();
    const writing = write(accounts, 3, 8);
    await first.close();
    // Queued while no numberer runs: the next ones take them, even two at once.
    await writing;
    const second = new AccountEventNumberer(db, { logger: SILENT_LOGGER, batchSize: 2 });
    const third = new AccountEventNumberer(db, { logger: SILENT_LOGGER, batchSize: 2 });
    second.start();
    third.start();
    await write(accounts, 2, 1);
    await drained();
    await Promise.all([second.close(), third.close()]);
    await numberAll(db);
    for (const a of accounts) {
      const rows = await eventsOf(a);
      expect(rows.map((r) => r.seq)).toEqual(Array.from({ length: 52 }, (_, i) => i + 1));
      expect(new Set(rows.map((r) => r.event_id)).size).toBe(52);
    }
  });
});
