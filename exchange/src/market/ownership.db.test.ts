// One writer per database, fenced (docs/ownership.md): who may take the
// books, and that a write batch under a past epoch never commits.

import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import type { Database } from '../db/database.js';
import { migrate } from '../db/migrate.js';
import { openPostgres } from '../db/postgres.js';
import { freshPostgres } from '../db/testing/fresh-database.js';
import type { FreshDatabase } from '../db/testing/fresh-database.js';
import { ChangeSet } from './change-set.js';
import { ALL_BOOKS, MarketOwnership, OwnershipLost, isFencedError } from './ownership.js';
import type { OwnershipOptions } from './ownership.js';
import { newOrderRow } from './rows.js';

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

let processes = 0;
function process_(o: Partial<OwnershipOptions> = {}): MarketOwnership {
  const pid = ++processes;
  return new MarketOwnership(
    db,
    {
      instanceId: `exchange-${pid}`,
      host: 'host-a',
      hostKey: 'boot-a/pidns-a',
      pid,
      url: `http://127.0.0.1:${8000 + pid}`,
    },
    { leaseMs: 60_000, ...o },
  );
}

let orders = 0;
/** A batch that rests one order in h100/us-west-1. */
function oneOrder(): { changes: ChangeSet; id: string } {
  const id = `ord_own${++orders}`;
  const changes = new ChangeSet();
  changes.order(
    newOrderRow({
      id,
      account_id: 'acc_own',
      organization_id: 'org_own',
      side: 'buy',
      order_type: 'limit',
      gpu_type: 'h100',
      zone: 'us-west-1',
      gpu_count: 8,
      duration_hours: 1,
      limit_price_cents: 200,
      allow_partial: false,
      start_ms: 0,
      flexible_window_hours: null,
      expires_input_ms: null,
      cluster_id: null,
      resale_lease_id: null,
      transfer_immediately: null,
      created_ms: 0,
    }),
  );
  return { changes, id };
}

async function written(id: string): Promise<boolean> {
  return (await db.query('SELECT 1 FROM orders WHERE id = $1', [id])).length === 1;
}

const BOOK = 'h100/us-west-1';

describe('market ownership (docs/ownership.md)', () => {
  it('one process takes every book; another sees who holds them and stands by', async () => {
    const a = process_();
    const b = process_();
    const got = await a.tryAcquire();
    expect(got.acquired).toBe(true);
    expect([...a.held.keys()].sort()).toEqual([...ALL_BOOKS].sort());
    const seen = await b.tryAcquire();
    expect(seen).toMatchObject({
      acquired: false,
      holder: { instanceId: a.identity.instanceId, pid: a.identity.pid, url: a.identity.url },
    });
    expect(b.held.size).toBe(0);
    await a.release();
  });

  it('a write batch commits under the current epoch and is refused whole under a past one', async () => {
    const a = process_();
    const b = process_({ isGone: () => true });
    expect((await a.tryAcquire()).acquired).toBe(true);
    const before = oneOrder();
    await before.changes.write(db, a.tokenFor([BOOK]));
    expect(await written(before.id)).toBe(true);

    // b takes the books at start (a counts as gone): every epoch is raised.
    expect((await b.tryAcquire(true)).acquired).toBe(true);
    expect(b.held.get(BOOK)).toBe((a.held.get(BOOK) ?? 0) + 1);

    const stale = oneOrder();
    const err = await stale.changes.write(db, a.tokenFor([BOOK])).catch((e: unknown) => e);
    expect(isFencedError(err)).toBe(true);
    expect(await written(stale.id)).toBe(false);
    await expect(a.renew()).rejects.toBeInstanceOf(OwnershipLost);

    const fresh2 = oneOrder();
    await fresh2.changes.write(db, b.tokenFor([BOOK]));
    expect(await written(fresh2.id)).toBe(true);
    await b.release();
  });

  it('a book this process never held is refused, not written unfenced', async () => {
    const a = process_();
    const batch = oneOrder();
    const err = await batch.changes.write(db, a.tokenFor([BOOK])).catch((e: unknown) => e);
    expect(isFencedError(err)).toBe(true);
    expect(await written(batch.id)).toBe(false);
  });

  it('a live lease keeps a standby out; once it lapses the standby takes over', async () => {
    const a = process_({ leaseMs: 400 });
    const b = process_();
    expect((await a.tryAcquire()).acquired).toBe(true);
    const blocked = await b.tryAcquire();
    expect(blocked.acquired).toBe(false);
    if (!blocked.acquired) expect(blocked.holder.leaseRemainingMs).toBeGreaterThan(0);
    // No renewal: the standby gets in once the database's clock passes the lease.
    let took = false;
    for (let i = 0; i < 100 && !took; i++) {
      took = (await b.tryAcquire()).acquired;
      if (!took) await new Promise((r) => setTimeout(r, 50));
    }
    expect(took).toBe(true);
    await expect(a.renew()).rejects.toBeInstanceOf(OwnershipLost);
    await b.release();
  });

  it('renewals keep the books; a release hands them over at once', async () => {
    const a = process_({ leaseMs: 60_000 });
    const b = process_();
    expect((await a.tryAcquire()).acquired).toBe(true);
    await a.renew();
    expect((await b.tryAcquire()).acquired).toBe(false);
    await a.release();
    expect((await b.tryAcquire()).acquired).toBe(true);
    await b.release();
  });

  it('at start, a holder that is gone is passed over; a live one is not', async () => {
    const a = process_();
    expect((await a.tryAcquire()).acquired).toBe(true);
    const alive = process_({ isGone: () => false });
    expect((await alive.tryAcquire(true)).acquired).toBe(false);
    const gone = process_({ isGone: (h) => h.pid === a.identity.pid });
    // Only at start: a standby that is already running waits for the lease.
    expect((await gone.tryAcquire(false)).acquired).toBe(false);
    expect((await gone.tryAcquire(true)).acquired).toBe(true);
    await gone.release();
  });

  it('the fence holds under READ COMMITTED only: the exchange asks for it, and a batch in another level is refused', async () => {
    // A database whose default is REPEATABLE READ (where a volatile function
    // reads with the statement's first snapshot): the exchange's pool still
    // runs READ COMMITTED.
    const name = new URL(fresh.url).pathname.slice(1);
    await db.query(`ALTER DATABASE ${name} SET default_transaction_isolation = 'repeatable read'`);
    try {
      const pool = openPostgres(fresh.url, 1);
      try {
        const [level] = await pool.query<{ transaction_isolation: string }>(
          'SHOW transaction_isolation',
        );
        expect(level?.transaction_isolation).toBe('read committed');
      } finally {
        await pool.close();
      }
      const a = process_();
      expect((await a.tryAcquire()).acquired).toBe(true);
      const client = new pg.Client({ connectionString: fresh.url });
      await client.connect();
      try {
        const err = await client
          .query('SELECT gpux_fence($1::json)', [a.tokenFor([BOOK])])
          .catch((e: unknown) => e);
        expect((err as { code?: string }).code).toBe('GX002');
      } finally {
        await client.end();
      }
      await a.release();
    } finally {
      await db.query(`ALTER DATABASE ${name} RESET default_transaction_isolation`);
    }
  });

  it("a takeover waits for the old owner's batch already past its fence, which commits; later ones fail", async () => {
    const a = process_();
    const b = process_({ isGone: () => true });
    expect((await a.tryAcquire()).acquired).toBe(true);
    // A batch of a's, held open after its fence (as if its commit were slow).
    const client = new pg.Client({ connectionString: fresh.url });
    await client.connect();
    try {
      const inFlight = oneOrder();
      await client.query('BEGIN');
      await client.query('SELECT gpux_fence($1::json)', [a.tokenFor([BOOK])]);
      await client.query(
        `INSERT INTO orders SELECT * FROM json_populate_recordset(NULL::orders, $1::json)`,
        [JSON.stringify([...inFlight.changes.orders.values()])],
      );
      let settled = false;
      const takeover = b.tryAcquire(true).finally(() => {
        settled = true;
      });
      // Still waiting on the batch's lock however long we look.
      await new Promise((r) => setTimeout(r, 300));
      expect(settled).toBe(false);
      await client.query('COMMIT');
      expect((await takeover).acquired).toBe(true);
      // What the old owner committed is there for the new one to load.
      expect(await written(inFlight.id)).toBe(true);

      const after = oneOrder();
      const err = await after.changes.write(db, a.tokenFor([BOOK])).catch((e: unknown) => e);
      expect(isFencedError(err)).toBe(true);
      expect(await written(after.id)).toBe(false);
    } finally {
      await client.end();
      await b.release();
    }
  });
});
