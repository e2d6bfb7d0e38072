// GET /v1/candles (docs/api/orders.md, "GET /v1/candles"): trades made by
// real orders at times the test sets, and the candles checked against
// figures worked out by hand: open and close by time and then by the
// book's order of fills, intervals named by their start, a fill at an
// interval's very start in that interval, empty intervals left out, the
// limit on intervals per request, the validation of every parameter, and
// the same candles after a restart.

import { FIELD_RULES } from '@gpux/shared';
import type { FieldProblem } from '@gpux/shared';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { freshPostgres } from '../db/testing/fresh-database.js';
import type { FreshDatabase } from '../db/testing/fresh-database.js';
import { MAX_CANDLES } from '../market/candles.js';
import { T0, testExchange } from '../market/testing/test-exchange.js';
import type { Book, Party, Reply, TestExchange } from '../market/testing/test-exchange.js';

const MIN = 60_000;
const at = (ms: number): string => new Date(ms).toISOString();

let fresh: FreshDatabase;
let ex: TestExchange;
let book: Book;
let reader: Party;

/** A trade at the clock's time: the provider's asks at `prices` (8 GPUs each), one market buy of them all. */
async function trade(
  provider: Party,
  buyer: Party,
  prices: readonly number[],
  hours: number,
): Promise<void> {
  for (const price of prices) {
    const sell = await ex.call('POST', '/v1/orders', provider.token, {
      side: 'sell',
      ...book,
      gpu_count: 8,
      duration_hours: 48,
      limit_price: price,
    });
    expect(sell.status, sell.body).toBe(200);
  }
  const buy = await ex.call('POST', '/v1/orders', buyer.token, {
    side: 'buy',
    ...book,
    gpu_count: 8 * prices.length,
    duration_hours: hours,
  });
  expect(buy.json['status'], buy.body).toBe('filled');
}

async function candles(query: string): Promise<Reply> {
  return ex.call(
    'GET',
    `/v1/candles?gpu_type=${book.gpu_type}&zone=${book.zone}&${query}`,
    reader.token,
  );
}

/**
 * The trades, at T0 = 2026-11-22T00:00:00Z:
 *
 *   00:00:00.000  $2.00 × 8 GPUs × 4 h      (at the first interval's very start)
 *   00:00:30.000  $2.10 × 8 × 2 h, then $2.30 × 8 × 2 h   (one buy: same time, the book's order)
 *   00:00:59.999  $1.90 × 8 × 1 h           (the first interval's last millisecond)
 *   00:01:00.000  $2.20 × 8 × 3 h           (the second interval's very start)
 *   00:03:00.500  $2.40 × 8 × 5 h           (00:02 has no trade)
 *
 * and one trade in another book at 00:00:30, which none of these candles counts.
 */
beforeAll(async () => {
  fresh = await freshPostgres();
  ex = await testExchange({ db: fresh.db });
  book = ex.book();
  const provider = await ex.party('provider');
  const buyer = await ex.party('buyer');
  reader = await ex.party('reader', { scopes: ['read'] });
  await ex.cluster(provider, 12, book.gpu_type, book.zone);
  await trade(provider, buyer, [2], 4);
  ex.clock.advance(30_000);
  await trade(provider, buyer, [2.1, 2.3], 2);
  await ex.marketLease('elsewhere');
  ex.clock.advance(29_999);
  await trade(provider, buyer, [1.9], 1);
  ex.clock.advance(1);
  await trade(provider, buyer, [2.2], 3);
  ex.clock.advance(2 * MIN + 500);
  await trade(provider, buyer, [2.4], 5);
});

afterAll(async () => {
  await ex?.stop();
  await fresh?.drop();
});

const FIRST = {
  time: at(T0),
  open: 2,
  high: 2.3,
  low: 1.9,
  close: 1.9,
  volume_gpus: 32,
  volume_gpu_hours: 8 * 4 + 8 * 2 + 8 * 2 + 8 * 1,
  trades: 4,
};
const SECOND = {
  time: at(T0 + MIN),
  open: 2.2,
  high: 2.2,
  low: 2.2,
  close: 2.2,
  volume_gpus: 8,
  volume_gpu_hours: 24,
  trades: 1,
};
const FOURTH = {
  time: at(T0 + 3 * MIN),
  open: 2.4,
  high: 2.4,
  low: 2.4,
  close: 2.4,
  volume_gpus: 8,
  volume_gpu_hours: 40,
  trades: 1,
};

describe('GET /v1/candles', () => {
  it('gives each minute with trades its open, high, low, close and volumes, oldest first', async () => {
    const r = await candles(`granularity=60&start=${at(T0)}&end=${at(T0 + 5 * MIN)}`);
    expect(r.status, r.body).toBe(200);
    expect(r.json).toEqual({
      gpu_type: book.gpu_type,
      zone: book.zone,
      granularity: 60,
      start: at(T0),
      end: at(T0 + 5 * MIN),
      // 00:02 and 00:04 had no trade: left out.
      candles: [FIRST, SECOND, FOURTH],
    });
  });

  it('sums the same trades into one five-minute candle', async () => {
    const r = await candles(`granularity=300&start=${at(T0)}&end=${at(T0 + 5 * MIN)}`);
    expect(r.json['candles']).toEqual([
      {
        time: at(T0),
        open: 2,
        high: 2.4,
        low: 1.9,
        close: 2.4,
        volume_gpus: 48,
        volume_gpu_hours: 72 + 24 + 40,
        trades: 6,
      },
    ]);
  });

  it('covers whole intervals: start rounds down, end (excluded) rounds up', async () => {
    // 00:00:59.999 is in the first minute, so the range starts at 00:00; the
    // last instant before 00:01:00.001 is in the second minute, so it ends at 00:02.
    const r = await candles(`granularity=60&start=${at(T0 + MIN - 1)}&end=${at(T0 + MIN + 1)}`);
    expect(r.json).toMatchObject({
      start: at(T0),
      end: at(T0 + 2 * MIN),
      candles: [FIRST, SECOND],
    });
    // end at an interval's start leaves that interval out: the fill at 00:01:00.000 is not counted.
    const before = await candles(`granularity=60&start=${at(T0)}&end=${at(T0 + MIN)}`);
    expect(before.json).toMatchObject({ end: at(T0 + MIN), candles: [FIRST] });
    // start at an interval's start includes its first fill, at that very millisecond.
    const from = await candles(`granularity=60&start=${at(T0 + MIN)}&end=${at(T0 + 2 * MIN)}`);
    expect(from.json['candles']).toEqual([SECOND]);
  });

  it('answers an empty list for a range without trades', async () => {
    const r = await candles(`granularity=60&start=${at(T0 + 2 * MIN)}&end=${at(T0 + 3 * MIN)}`);
    expect(r.status).toBe(200);
    expect(r.json['candles']).toEqual([]);
  });

  it(`defaults end to the end of the interval in progress, start to ${MAX_CANDLES} intervals back`, async () => {
    // The clock is at 00:03:00.500: its interval, 00:03, is the last one covered.
    const r = await candles('granularity=60');
    expect(r.json).toMatchObject({
      start: at(T0 + 4 * MIN - MAX_CANDLES * MIN),
      end: at(T0 + 4 * MIN),
      candles: [FIRST, SECOND, FOURTH],
    });
    const day = await candles('granularity=86400');
    expect(day.json).toMatchObject({
      start: at(T0 + 86_400_000 - MAX_CANDLES * 86_400_000),
      end: at(T0 + 86_400_000),
    });
    expect(day.json['candles']).toMatchObject([{ time: at(T0), trades: 6 }]);
    // start alone: up to the minute in progress.
    const since = await candles(`granularity=60&start=${at(T0 + MIN)}`);
    expect(since.json).toMatchObject({ end: at(T0 + 4 * MIN), candles: [SECOND, FOURTH] });
  });

  it(`covers at most ${MAX_CANDLES} intervals, and says so when asked for more`, async () => {
    const most = await candles(`granularity=60&start=${at(T0)}&end=${at(T0 + MAX_CANDLES * MIN)}`);
    expect(most.status, most.body).toBe(200);
    for (const [start, end] of [
      [T0, T0 + (MAX_CANDLES + 1) * MIN],
      // One millisecond past an interval's start on both ends: 301 intervals.
      [T0 + 1, T0 + MAX_CANDLES * MIN + 1],
    ] as const) {
      const r = await candles(`granularity=60&start=${at(start)}&end=${at(end)}`);
      const e = invalid(r);
      expect(e.errors).toHaveLength(1);
      expect(e.errors[0]).toMatchObject({ field: 'start', rule: 'conflict' });
      expect(e.message).toContain(`at most ${MAX_CANDLES}`);
      expect(e.message).toContain('301 intervals of 60 s');
    }
    const far = invalid(await candles(`granularity=3600&start=2000-01-01T00:00:00Z`));
    expect(far.message).toContain(`at most ${MAX_CANDLES}`);
  });

  it('refuses a start that is not before end', async () => {
    for (const query of [
      `granularity=60&start=${at(T0 + MIN)}&end=${at(T0 + MIN)}`,
      `granularity=60&start=${at(T0 + 2 * MIN)}&end=${at(T0 + MIN)}`,
      // end defaults to 00:04, the end of the minute in progress (now is 00:03:00.500).
      `granularity=60&start=${at(T0 + 4 * MIN)}`,
    ]) {
      const e = invalid(await candles(query));
      expect(e.errors).toMatchObject([{ field: 'start', rule: 'conflict' }]);
    }
  });

  it('validates every parameter, naming the field', async () => {
    const cases: [string, string, FieldProblem['rule'], Partial<FieldProblem>?][] = [
      ['gpu_type=a100&zone=us-west-1&granularity=60', 'gpu_type', 'enum'],
      ['gpu_type=h100&zone=mars-1&granularity=60', 'zone', 'enum'],
      ['zone=us-west-1&granularity=60', 'gpu_type', 'required'],
      ['gpu_type=h100&granularity=60', 'zone', 'required'],
      ['gpu_type=h100&zone=us-west-1', 'granularity', 'required'],
      [
        'gpu_type=h100&zone=us-west-1&granularity=120',
        'granularity',
        'enum',
        { allowed: [60, 300, 900, 3600, 21600, 86400] },
      ],
      ['gpu_type=h100&zone=us-west-1&granularity=minute', 'granularity', 'type'],
      ['gpu_type=h100&zone=us-west-1&granularity=60&start=yesterday', 'start', 'format'],
      ['gpu_type=h100&zone=us-west-1&granularity=60&end=2026-11-22T10:00:00', 'end', 'format'],
      ['gpu_type=h100&zone=us-west-1&granularity=60&limit=10', 'limit', 'unknown_field'],
    ];
    for (const [query, field, rule, extra] of cases) {
      const r = await ex.call('GET', `/v1/candles?${query}`, reader.token);
      const e = invalid(r);
      // The first problem is this one; a word for a number is also not one of the values.
      expect(e.errors[0], query).toMatchObject({ field, rule, ...extra });
      for (const p of e.errors) expect(p.field, query).toBe(field);
    }
  });

  it('needs a token with the read scope, like the trades', async () => {
    const url = `/v1/candles?gpu_type=${book.gpu_type}&zone=${book.zone}&granularity=60`;
    expect((await ex.call('GET', url, 'nope')).status).toBe(401);
    const trader = await ex.party('trader', { scopes: ['trade'] });
    expect((await ex.call('GET', url, trader.token)).status).toBe(403);
  });

  it('gives the same candles after a restart, from the fills on record', async () => {
    const query = `granularity=60&start=${at(T0)}&end=${at(T0 + 5 * MIN)}`;
    const before = await candles(query);
    await ex.stop();
    ex = await testExchange({ db: fresh.db });
    const after = await candles(query);
    expect(after.status).toBe(200);
    expect(after.json).toEqual(before.json);
  });
});

/** The invalid_request of a reply, in the shape every one has. */
function invalid(r: Reply): { message: string; errors: FieldProblem[] } {
  expect(r.status, r.body).toBe(400);
  const e = r.json['error'] as {
    code: string;
    message: string;
    field?: string;
    errors: FieldProblem[];
  };
  expect(e.code).toBe('invalid_request');
  expect(e.field).toBe(e.errors[0]?.field);
  for (const p of e.errors) expect(FIELD_RULES).toContain(p.rule);
  return e;
}
