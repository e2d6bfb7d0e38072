// The CHECKs and enum types of the tables written for every order
// (migrations 0005-0007): the database's own last line of defence under the
// book writers. A row that breaks just one rule is refused, and the rows the
// exchange writes (NULLs where a rule does not apply) pass.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import type { Database } from './database.js';
import { migratedPostgres } from './testing/fresh-database.js';
import type { FreshDatabase } from './testing/fresh-database.js';

let fresh: FreshDatabase | undefined;
let db: Database;

beforeAll(async () => {
  fresh = await migratedPostgres();
  db = fresh.db;
  await db.exec(`
    INSERT INTO organizations (id, name) VALUES ('org_a', 'a');
    INSERT INTO accounts (id, organization_id, name) VALUES ('acc_a', 'org_a', 'a');
    INSERT INTO orders (id, account_id, organization_id, side, order_type, gpu_type, zone,
        gpu_count, duration_hours, limit_price_cents, allow_partial, start_ms, status,
        filled_gpus, cancelled_gpus, created_ms, book_state, remaining_nodes)
      VALUES ('ord_1', 'acc_a', 'org_a', 'buy', 'limit', 'h100', 'us-west-1',
        16, 4, 200, false, 0, 'pending', 0, 0, 0, 'resting', 2);
    INSERT INTO leases (id, account_id, organization_id, buy_order_id, seller_account_id,
        cluster_id, gpu_type, zone, gpu_count, hourly_cents, compute_cents, fee_cents,
        start_ms, end_ms, created_ms, status)
      VALUES ('lse_1', 'acc_a', 'org_a', 'ord_1', 'acc_a', 'cls_x', 'h100', 'us-west-1',
        16, 3200, 12800, 1280, 0, 3600000, 0, 'provisioning');
    INSERT INTO fills (id, gpu_type, zone, buy_order_id, sell_order_id, lease_id, gpus,
        price_cents, hours, at_ms, book_seq)
      VALUES ('trd_1', 'h100', 'us-west-1', 'ord_1', 'ord_2', 'lse_1', 16, 200, 4, 0, 1);
  `);
});

afterAll(async () => {
  await fresh?.drop();
});

/** Runs `sql` in a transaction that is always rolled back; resolves with the error, if any. */
async function attempt(sql: string): Promise<string | undefined> {
  try {
    await db.transaction(async (tx) => {
      await tx.exec(sql);
      throw new Error('rollback');
    });
  } catch (err) {
    const message = (err as Error).message;
    return message === 'rollback' ? undefined : message;
  }
  return undefined;
}

const REFUSED: readonly [string, string][] = [
  ['orders: gpu_count > 0', 'UPDATE orders SET gpu_count = 0, remaining_nodes = 0'],
  ['orders: whole nodes (D5)', 'UPDATE orders SET gpu_count = 12'],
  ['orders: duration ≥ 1 h', 'UPDATE orders SET duration_hours = 0'],
  ['orders: duration ≤ 720 h', 'UPDATE orders SET duration_hours = 721'],
  ['orders: limit price > 0', 'UPDATE orders SET limit_price_cents = 0'],
  ['orders: flexible window ≥ 1 h', 'UPDATE orders SET flexible_window_hours = 0'],
  ['orders: flexible window ≤ 720 h', 'UPDATE orders SET flexible_window_hours = 721'],
  ['orders: filled ≥ 0', 'UPDATE orders SET filled_gpus = -8'],
  ['orders: cancelled ≥ 0', 'UPDATE orders SET cancelled_gpus = -8'],
  ['orders: filled + cancelled ≤ count', 'UPDATE orders SET filled_gpus = 8, cancelled_gpus = 16'],
  ['orders: book_state and remaining_nodes together', 'UPDATE orders SET remaining_nodes = NULL'],
  ['leases: gpu_count > 0', 'UPDATE leases SET gpu_count = 0'],
  ['leases: whole nodes', 'UPDATE leases SET gpu_count = 4'],
  ['leases: hourly_cents > 0', 'UPDATE leases SET hourly_cents = 0'],
  ['leases: ends after it starts', 'UPDATE leases SET end_ms = start_ms'],
  ['fills: gpus > 0', 'UPDATE fills SET gpus = 0'],
  ['fills: price > 0', 'UPDATE fills SET price_cents = 0'],
  ['fills: hours ≥ 1', 'UPDATE fills SET hours = 0'],
  ['fills: hours ≤ 720', 'UPDATE fills SET hours = 721'],
  [
    'ledger_entries: kind',
    `INSERT INTO ledger_transactions (id, kind) VALUES ('txn_k', 'test');
     INSERT INTO ledger_entries (transaction_id, account_id, kind, amount_cents)
       VALUES ('txn_k', 'acc_a', 'Bad Kind', 5), ('txn_k', 'acc_platform', 'ok', -5)`,
  ],
  [
    'ledger_entries: amount ≠ 0',
    `INSERT INTO ledger_transactions (id, kind) VALUES ('txn_z', 'test');
     INSERT INTO ledger_entries (transaction_id, account_id, kind, amount_cents)
       VALUES ('txn_z', 'acc_a', 'zero', 0)`,
  ],
];

/** Columns of a fixed vocabulary: enum types since migration 0007. */
const NOT_IN_VOCABULARY: readonly [string, string][] = [
  ['orders: side', "UPDATE orders SET side = 'hold'"],
  ['orders: order_type', "UPDATE orders SET order_type = 'stop'"],
  ['orders: gpu_type', "UPDATE orders SET gpu_type = 'a100'"],
  ['orders: zone', "UPDATE orders SET zone = 'mars-1'"],
  ['orders: status', "UPDATE orders SET status = 'open'"],
  ['orders: book_state', "UPDATE orders SET book_state = 'asleep'"],
  ['orders: status in another case', "UPDATE orders SET status = 'Pending'"],
  ['leases: status', "UPDATE leases SET status = 'paused'"],
  ['leases: gpu_type', "UPDATE leases SET gpu_type = 'a100'"],
  ['leases: zone', "UPDATE leases SET zone = 'mars-1'"],
  ['fills: gpu_type', "UPDATE fills SET gpu_type = 'a100'"],
  ['fills: zone', "UPDATE fills SET zone = ''"],
];

describe('CHECKs of the tables written for every order', () => {
  it.each(REFUSED)('refuses a row that breaks one rule: %s', async (_rule, sql) => {
    expect(await attempt(sql)).toMatch(/violates check constraint/);
  });

  it.each(NOT_IN_VOCABULARY)('refuses a word outside the vocabulary: %s', async (_rule, sql) => {
    expect(await attempt(sql)).toMatch(/invalid input value for enum gpux_/);
  });

  it('accepts every word of each vocabulary', async () => {
    const ok = [
      "UPDATE orders SET side = 'sell', order_type = 'market', limit_price_cents = NULL",
      ...['h100', 'h200', 'b200', 'b300'].map((g) => `UPDATE orders SET gpu_type = '${g}'`),
      ...['us-west-1', 'us-east-1', 'eu-west-1'].map((z) => `UPDATE fills SET zone = '${z}'`),
      ...['pending', 'partial', 'filled', 'cancelled'].map(
        (st) => `UPDATE orders SET status = '${st}'`,
      ),
      ...['resting', 'scheduled', 'unseen'].map((b) => `UPDATE orders SET book_state = '${b}'`),
      ...['provisioning', 'active', 'terminated', 'expired', 'failed'].map(
        (st) => `UPDATE leases SET status = '${st}'`,
      ),
    ];
    for (const sql of ok) expect(await attempt(sql), sql).toBeUndefined();
  });

  it('lets NULLs pass where a rule does not apply (a market order, a closed order)', async () => {
    expect(
      await attempt(
        `UPDATE orders SET order_type = 'market', limit_price_cents = NULL, status = 'filled',
           filled_gpus = 16, book_state = NULL, remaining_nodes = NULL`,
      ),
    ).toBeUndefined();
    expect(await attempt('UPDATE orders SET flexible_window_hours = 24')).toBeUndefined();
  });
});
