import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { withAdmin } from '../src/db/testing/admin-database.js';
import { FloorPeer } from './floor-peer.js';

// The HTTP bench's floor peer (docs/benchmarks.md "The floor peer"): an
// answer only once its row is committed, one row per order, per book.
describe('the floor peer', () => {
  const floor = new FloorPeer();
  let url = '';
  const logged: string[] = [];

  beforeAll(async () => {
    url = await floor.start((line) => logged.push(line));
  }, 30_000);
  afterAll(() => floor.stop());

  const post = (body: string): Promise<Response> =>
    fetch(`${url}/v1/orders`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body,
    });

  it('answers each order once its row is stored, the orders of several books at once', async () => {
    const orders = Array.from({ length: 40 }, (_, i) => ({
      side: i % 2 === 0 ? 'buy' : 'sell',
      gpu_type: i % 3 === 0 ? 'h100' : 'b200',
      zone: 'us-west-1',
      gpu_count: 8,
      n: i,
    }));
    const answers = await Promise.all(orders.map((o) => post(JSON.stringify(o))));
    for (const a of answers) {
      expect(a.status).toBe(200);
      expect(await a.json()).toEqual({ status: 'pending', filled_gpus: 0 });
    }
    const db = new pg.Client({ connectionString: floor.databaseUrl });
    await db.connect();
    try {
      const r = await db.query<{ book: string; n: number }>(
        `SELECT book, (body->>'n')::int AS n FROM floor_orders ORDER BY n`,
      );
      expect(r.rows.map((x) => x.n)).toEqual(orders.map((o) => o.n));
      expect(r.rows.map((x) => x.book)).toEqual(orders.map((o) => `${o.gpu_type}/${o.zone}`));
    } finally {
      await db.end();
    }
  });

  it('refuses a body that is not a JSON object, and any other route', async () => {
    expect((await post('{not json')).status).toBe(400);
    expect((await post('42')).status).toBe(400);
    expect((await fetch(`${url}/v1/orders`)).status).toBe(404);
    expect(logged).toEqual([]);
  });

  it('drops its database when stopped', async () => {
    await floor.stop();
    const left = await withAdmin((c) =>
      c.query('SELECT 1 FROM pg_database WHERE datname = $1', [floor.dbName]),
    );
    expect(left.rowCount).toBe(0);
  });
});
