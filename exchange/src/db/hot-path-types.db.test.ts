// Migration 0007 on a database that already has orders, leases, fills and
// outbox events: every value is kept, now in its enum type (or json), and
// the queries that filter on them still work.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { listLeases, listOrders } from '../market/queries.js';
import { migrate, readMigrations } from './migrate.js';
import { freshPostgres } from './testing/fresh-database.js';
import type { FreshDatabase } from './testing/fresh-database.js';

let fresh: FreshDatabase;

beforeAll(async () => {
  fresh = await freshPostgres();
});

afterAll(async () => {
  await fresh?.drop();
});

describe('migration 0007 (hot-path types)', () => {
  it('keeps every existing row and value', async () => {
    const all = readMigrations();
    const before = all.filter((m) => m.version < 7);
    expect(before.length).toBeGreaterThan(0);
    await migrate(fresh.db, before);
    await fresh.db.exec(`
      INSERT INTO organizations (id, name) VALUES ('org_a', 'a');
      INSERT INTO accounts (id, organization_id, name) VALUES ('acc_a', 'org_a', 'a');
      INSERT INTO orders (id, account_id, organization_id, side, order_type, gpu_type, zone,
          gpu_count, duration_hours, limit_price_cents, allow_partial, start_ms, status,
          filled_gpus, cancelled_gpus, created_ms, book_state, remaining_nodes)
        VALUES
          ('ord_1', 'acc_a', 'org_a', 'buy', 'limit', 'h100', 'us-west-1',
           16, 4, 200, false, 0, 'pending', 0, 0, 1, 'resting', 2),
          ('ord_2', 'acc_a', 'org_a', 'sell', 'market', 'b300', 'eu-west-1',
           8, 4, NULL, true, 0, 'filled', 8, 0, 2, NULL, NULL);
      INSERT INTO leases (id, account_id, organization_id, buy_order_id, seller_account_id,
          cluster_id, gpu_type, zone, gpu_count, hourly_cents, compute_cents, fee_cents,
          start_ms, end_ms, created_ms, status)
        VALUES ('lse_1', 'acc_a', 'org_a', 'ord_1', 'acc_a', 'cls_x', 'h200', 'us-east-1',
          16, 3200, 12800, 1280, 0, 3600000, 0, 'active');
      INSERT INTO fills (id, gpu_type, zone, buy_order_id, sell_order_id, lease_id, gpus,
          price_cents, hours, at_ms, book_seq)
        VALUES ('trd_1', 'b200', 'us-east-1', 'ord_1', 'ord_2', 'lse_1', 16, 200, 4, 0, 1);
      INSERT INTO outbox (event_id, subject, payload, created_ms)
        VALUES ('evt_1', 'gpux.test', '{"b": 1, "a": [true, null]}', 0);
    `);

    expect(await migrate(fresh.db, all)).toEqual(
      all.filter((m) => m.version >= 7).map((m) => m.version),
    );

    const types = await fresh.db.query<{ table_name: string; column_name: string; t: string }>(
      `SELECT table_name, column_name, udt_name AS t FROM information_schema.columns
        WHERE table_name IN ('orders', 'leases', 'fills', 'outbox')
          AND column_name IN ('side', 'order_type', 'gpu_type', 'zone', 'status', 'book_state', 'payload')
        ORDER BY table_name, column_name`,
    );
    expect(types.map((r) => `${r.table_name}.${r.column_name} ${r.t}`)).toEqual([
      'fills.gpu_type gpux_gpu_type',
      'fills.zone gpux_zone',
      'leases.gpu_type gpux_gpu_type',
      'leases.status gpux_lease_status',
      'leases.zone gpux_zone',
      'orders.book_state gpux_book_state',
      'orders.gpu_type gpux_gpu_type',
      'orders.order_type gpux_order_type',
      'orders.side gpux_side',
      'orders.status gpux_order_status',
      'orders.zone gpux_zone',
      'outbox.payload json',
    ]);

    expect(
      await fresh.db.query(
        'SELECT id, side, order_type, gpu_type, zone, status, book_state FROM orders ORDER BY id',
      ),
    ).toEqual([
      {
        id: 'ord_1',
        side: 'buy',
        order_type: 'limit',
        gpu_type: 'h100',
        zone: 'us-west-1',
        status: 'pending',
        book_state: 'resting',
      },
      {
        id: 'ord_2',
        side: 'sell',
        order_type: 'market',
        gpu_type: 'b300',
        zone: 'eu-west-1',
        status: 'filled',
        book_state: null,
      },
    ]);
    expect(await fresh.db.query('SELECT gpu_type, zone, status FROM leases')).toEqual([
      { gpu_type: 'h200', zone: 'us-east-1', status: 'active' },
    ]);
    expect(await fresh.db.query('SELECT gpu_type, zone FROM fills')).toEqual([
      { gpu_type: 'b200', zone: 'us-east-1' },
    ]);
    expect(await fresh.db.query('SELECT payload FROM outbox')).toEqual([
      { payload: { b: 1, a: [true, null] } },
    ]);

    // The account's filters (D21) on the enum columns.
    const page = { limit: 10, offset: 0 };
    const filled = await listOrders(fresh.db, 'acc_a', {
      status: 'filled',
      side: undefined,
      ...page,
    });
    expect(filled.rows.map((r) => r.id)).toEqual(['ord_2']);
    const buys = await listOrders(fresh.db, 'acc_a', { status: 'all', side: 'buy', ...page });
    expect([buys.total, buys.rows.map((r) => r.id)]).toEqual([1, ['ord_1']]);
    expect((await listLeases(fresh.db, 'acc_a', { status: 'active', ...page })).total).toBe(1);
    expect((await listLeases(fresh.db, 'acc_a', { status: 'expired', ...page })).total).toBe(0);
  });
});
