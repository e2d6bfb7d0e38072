// D23 across a crash: requests with an Idempotency-Key in flight when the
// exchange is killed (SIGKILL) are retried, with the same keys and bodies,
// after it restarts. Each must go through exactly once: an order whose batch
// committed answers its first answer again (the answer was committed with
// it); a claim that committed nothing was released at the restart and runs
// now. Before, such claims stayed "409 in progress" for 24 h.

import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// Not part of the exchange's package (left out of its dist): listed by path in test/tsconfig.json.
import { createDatabase, uniqueDatabaseName } from '../exchange/src/db/testing/admin-database.js';
import type { ScratchDatabase } from '../exchange/src/db/testing/admin-database.js';
import { startExchangeProcess } from './support/exchange-process.js';
import type { ExchangeProcess } from './support/exchange-process.js';

const ADMIN_TOKEN = 'e2e-admin-token-crash-0123456789';
const KEYS = 48;

let database: ScratchDatabase | undefined;
let exchange: ExchangeProcess | undefined;
let base = '';

async function start(): Promise<void> {
  exchange = await startExchangeProcess({
    DATABASE_URL: database?.url ?? '',
    // No NATS here: the in-process bus on purpose.
    GPUX_IN_PROCESS_BUS: '1',
    GPUX_ADMIN_TOKEN: ADMIN_TOKEN,
    GPUX_DEMO: '0',
    GPUX_RATE_ORDERS_PER_MINUTE: '100000',
    GPUX_RATE_QUERIES_PER_MINUTE: '100000',
  });
  base = exchange.url;
}

async function kill(): Promise<void> {
  await exchange?.stop('SIGKILL');
  exchange = undefined;
}

/** One POST /v1/orders with a key; a request cut by the crash resolves to status 0. */
async function order(token: string, key: string, price: number): Promise<number> {
  try {
    const res = await fetch(`${base}/v1/orders`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${token}`,
        'content-type': 'application/json',
        'idempotency-key': key,
      },
      body: JSON.stringify({
        side: 'buy',
        gpu_type: 'h100',
        zone: 'us-west-1',
        gpu_count: 8,
        // $16 or more: over D16's minimum.
        duration_hours: 2,
        limit_price: price,
      }),
    });
    await res.arrayBuffer();
    return res.status;
  } catch {
    return 0;
  }
}

/** Claims of the account whose answer was never recorded. */
async function claimsInProgress(accountId: string): Promise<number> {
  const c = new pg.Client({ connectionString: database?.url });
  await c.connect();
  try {
    const { rows } = await c.query(
      'SELECT 1 FROM idempotency_keys WHERE account_id = $1 AND status_code IS NULL',
      [accountId],
    );
    return rows.length;
  } finally {
    await c.end();
  }
}

beforeAll(async () => {
  database = await createDatabase(uniqueDatabaseName('gpux_e2e'));
  await start();
}, 60_000);

afterAll(async () => {
  await kill();
  await database?.drop();
});

describe('D23: Idempotency-Keys across a crash of the exchange', () => {
  it('a retry after the restart goes through exactly once for every key', async () => {
    const res = await fetch(`${base}/v1/admin/accounts`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'lab', organization: 'lab', scopes: ['trade', 'read'] }),
    });
    const account = (await res.json()) as { token: string; account_id: string };
    // Each key its own price (a resting bid), so the orders tell which key made them.
    const price = (i: number): number => (100 + i) / 100;
    // Requests go out a few ms apart; the kill comes once ten have their
    // answer: by then some committed, some are claimed and running, some are
    // not sent yet.
    let answered = 0;
    const first: Promise<number>[] = [];
    const killed = new Promise<void>((resolve) => {
      for (let i = 0; i < KEYS; i++) {
        setTimeout(() => {
          first.push(
            order(account.token, `k-${i}`, price(i)).then((status) => {
              if (status === 200 && ++answered === 10) resolve();
              return status;
            }),
          );
        }, i * 3);
      }
    });
    await killed;
    await kill();
    const before = await Promise.all(first);
    const inProgress = await claimsInProgress(account.account_id);
    await start();
    const retried = await Promise.all(
      Array.from({ length: KEYS }, (_, i) => order(account.token, `k-${i}`, price(i))),
    );
    expect(retried.map((s, i) => [i, s]).filter(([, s]) => s !== 200)).toEqual([]);

    const c = new pg.Client({ connectionString: database?.url });
    await c.connect();
    try {
      const { rows } = await c.query<{ price: string; n: string }>(
        `SELECT limit_price_cents AS price, count(*) AS n FROM orders
          WHERE account_id = $1 GROUP BY limit_price_cents`,
        [account.account_id],
      );
      const perKey = new Map(rows.map((r) => [Number(r.price), Number(r.n)]));
      const missing: number[] = [];
      const twice: number[] = [];
      for (let i = 0; i < KEYS; i++) {
        const n = perKey.get(100 + i) ?? 0;
        if (n === 0) missing.push(i);
        if (n > 1) twice.push(i);
      }
      expect({ missing, twice }).toEqual({ missing: [], twice: [] });
      expect(await claimsInProgress(account.account_id)).toBe(0);
    } finally {
      await c.end();
    }
    console.log(
      `D23 crash: ${before.filter((s) => s === 200).length} of ${KEYS} answered before the kill, ` +
        `${inProgress} claims in progress at the kill; after the restart every retry 200, one order per key`,
    );
  });
});
