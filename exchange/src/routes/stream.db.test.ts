// GET /v1/stream over real HTTP (issue 22): clients that check every
// sequence number and keep a copy of the book, compared with GET
// /v1/orderbook after a burst of random orders and cancels; the ways a
// client may start (the stream's snapshot, the REST snapshot then
// Last-Event-ID, the REST snapshot with buffered events); and the numbers
// GET /v1/orderbook carries.

import { randomBytes } from 'node:crypto';

import { GpuxError } from '@gpux/shared';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { buildApp } from '../app.js';

import { BookCopy, SseClient } from '../feed/testing/sse-client.js';
import { SecretBox } from '../leases/secret-box.js';
import type { SseEvent } from '../feed/testing/sse-client.js';
import { testExchange } from '../market/testing/test-exchange.js';
import type { Book, Party, TestExchange } from '../market/testing/test-exchange.js';

let ex: TestExchange;
let url: string;

beforeAll(async () => {
  ex = await testExchange();
  url = await ex.listen();
});

afterAll(async () => {
  await ex.close();
});

const q = (b: Book): string => `gpu_type=${b.gpu_type}&zone=${b.zone}`;

/** A small seeded PRNG (mulberry32): the same burst every run. */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

interface Trading {
  readonly book: Book;
  readonly providers: readonly Party[];
  readonly buyers: readonly Party[];
  readonly reader: Party;
}

async function trading(): Promise<Trading> {
  const book = ex.book();
  const providers = [await ex.party('provider'), await ex.party('provider')];
  for (const p of providers) await ex.cluster(p, 200, book.gpu_type, book.zone);
  const buyers = [await ex.party('buyer'), await ex.party('buyer'), await ex.party('buyer')];
  return { book, providers, buyers, reader: await ex.party('reader', { scopes: ['read'] }) };
}

/**
 * `count` random sells, buys (limit, some partial) and cancels of open
 * orders, in waves of concurrent requests (so batches hold several
 * commands); `halfway` runs once half of them are answered.
 */
async function burst(
  t: Trading,
  seed: number,
  count: number,
  halfway?: () => Promise<void>,
): Promise<void> {
  const random = rng(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(random() * xs.length)] as T;
  const open: { id: string; owner: Party }[] = [];
  const price = (): number => Math.round(190 + random() * 20) / 100;
  const one = async (): Promise<void> => {
    const r = random();
    if (r < 0.2 && open.length > 0) {
      const [o] = open.splice(Math.floor(random() * open.length), 1);
      if (o === undefined) return;
      const c = await ex.call('DELETE', `/v1/orders/${o.id}`, o.owner.token);
      expect([200, 409]).toContain(c.status);
      return;
    }
    const sell = r < 0.6;
    const owner = sell ? pick(t.providers) : pick(t.buyers);
    const body = sell
      ? {
          side: 'sell',
          ...t.book,
          gpu_count: 8 * (1 + Math.floor(random() * 3)),
          duration_hours: 48,
          limit_price: price(),
        }
      : {
          side: 'buy',
          ...t.book,
          gpu_count: 8 * (1 + Math.floor(random() * 2)),
          duration_hours: 4,
          limit_price: price(),
          ...(random() < 0.5 ? { allow_partial: true } : {}),
        };
    const res = await ex.call('POST', '/v1/orders', owner.token, body);
    expect(res.status, res.body).toBe(200);
    const status = res.json['status'];
    if (status === 'pending' || status === 'partial') {
      open.push({ id: res.json['order_id'] as string, owner });
    }
  };
  const waves = Math.ceil(count / 10);
  for (let w = 0; w < waves; w++) {
    await Promise.all(Array.from({ length: 10 }, () => one()));
    if (w === Math.floor(waves / 2)) await halfway?.();
  }
}

async function orderbook(t: Trading): Promise<Record<string, unknown>> {
  const r = await ex.call('GET', `/v1/orderbook?${q(t.book)}&depth=50`, t.reader.token);
  expect(r.status).toBe(200);
  return r.json;
}

/** Applies `client`'s events to `copy` until it has the update numbered `sequence`. */
async function follow(client: SseClient, copy: BookCopy, sequence: number): Promise<void> {
  while (copy.sequence !== sequence) {
    const e = await client.next();
    if (e === undefined) throw new Error(`the stream ended at ${copy.sequence}`);
    copy.apply(e);
  }
}

describe('GET /v1/stream', () => {
  it('a client checking every number keeps the book GET /v1/orderbook shows, through a burst of orders and cancels', async () => {
    const t = await trading();
    const streamed = await SseClient.open(`${url}/v1/stream?${q(t.book)}`);
    expect(streamed.status).toBe(200);
    expect(streamed.headers['content-type']).toBe('text/event-stream; charset=utf-8');
    const copy = new BookCopy();
    copy.apply((await streamed.next()) as SseEvent);
    expect(copy.sequence).toBe(0);

    // Started from the REST snapshot taken halfway, two ways (docs/api/market-data.md).
    const buffered = await SseClient.open(`${url}/v1/stream?${q(t.book)}`);
    let resumed: SseClient | undefined;
    const fromRest = new BookCopy();
    const fromBuffer = new BookCopy();
    await burst(t, 22, 300, async () => {
      const rest = await orderbook(t);
      const sequence = rest['sequence'] as number;
      expect(sequence).toBeGreaterThan(0);
      for (const c of [fromRest, fromBuffer]) {
        c.apply({ id: String(sequence), event: 'snapshot', data: { ...rest, sequence } });
      }
      resumed = await SseClient.open(`${url}/v1/stream?${q(t.book)}`, {
        'last-event-id': String(sequence),
      });
    });

    const end = await orderbook(t);
    const last = end['sequence'] as number;
    await follow(streamed, copy, last);
    expect(copy.top(50)).toEqual({ bids: end['bids'], asks: end['asks'] });
    expect(copy.snapshots).toBe(1);
    const trades = await ex.call('GET', `/v1/trades?${q(t.book)}&limit=1`, t.reader.token);
    expect(copy.trades).toBe(trades.json['total']);
    expect(copy.trades).toBeGreaterThan(0);

    // Resumed after the REST snapshot's number: no snapshot, the next update first.
    if (resumed === undefined) throw new Error('never resumed');
    const first = await resumed.next();
    expect(first?.event).not.toBe('snapshot');
    expect(Number(first?.id)).toBe((fromRest.sequence ?? 0) + 1);
    fromRest.apply(first as SseEvent);
    await follow(resumed, fromRest, last);
    expect(fromRest.top(50)).toEqual(copy.top(50));

    // Buffered from before the REST snapshot: drop what it already holds.
    for (;;) {
      const e = await buffered.next();
      if (e === undefined) throw new Error('the buffered stream ended');
      if ((e.data['sequence'] as number) <= (fromBuffer.sequence ?? 0)) continue;
      fromBuffer.apply(e);
      if (fromBuffer.sequence === last) break;
    }
    expect(fromBuffer.top(50)).toEqual(copy.top(50));
    for (const c of [streamed, buffered, resumed]) c.close();
  });

  it('levels are absolute and a level that empties says 0; orders waiting for their start are not shown', async () => {
    const t = await trading();
    const client = await SseClient.open(`${url}/v1/stream?${q(t.book)}`);
    const snapshot = await client.next();
    expect(snapshot).toMatchObject({
      event: 'snapshot',
      data: { type: 'snapshot', ...t.book, sequence: 0, bids: [], asks: [] },
    });
    const [provider] = t.providers;
    const [buyer] = t.buyers;
    if (provider === undefined || buyer === undefined) throw new Error('no parties');
    const sell = (price: number, extra = {}): ReturnType<TestExchange['call']> =>
      ex.call('POST', '/v1/orders', provider.token, {
        side: 'sell',
        ...t.book,
        gpu_count: 16,
        duration_hours: 48,
        limit_price: price,
        ...extra,
      });
    const ids: string[] = [];
    for (const extra of [
      {},
      {},
      { start_time: new Date(ex.clock.now() + 3_600_000).toISOString() },
    ]) {
      // The third starts in an hour: not in the visible book, so no event.
      const r = await sell(2, extra);
      expect(r.status).toBe(200);
      ids.push(r.json['order_id'] as string);
    }
    const buy = await ex.call('POST', '/v1/orders', buyer.token, {
      side: 'buy',
      ...t.book,
      gpu_count: 16,
      duration_hours: 4,
      limit_price: 2,
    });
    expect(buy.json['status']).toBe('filled');
    const events = [
      await client.next(),
      await client.next(),
      await client.next(),
      await client.next(),
    ];
    expect(events.map((e) => e?.data)).toEqual([
      expect.objectContaining({
        type: 'level',
        sequence: 1,
        side: 'ask',
        price: 2,
        gpus: 16,
        orders: 1,
      }),
      expect.objectContaining({
        type: 'level',
        sequence: 2,
        side: 'ask',
        price: 2,
        gpus: 32,
        orders: 2,
      }),
      expect.objectContaining({ type: 'trade', sequence: 3, price: 2, gpus: 16 }),
      expect.objectContaining({
        type: 'level',
        sequence: 4,
        side: 'ask',
        price: 2,
        gpus: 16,
        orders: 1,
      }),
    ]);
    // D33: a trade names no account, order or lease.
    expect(Object.keys(events[2]?.data ?? {}).sort()).toEqual([
      'gpus',
      'price',
      'sequence',
      'time',
      'type',
    ]);
    expect((await orderbook(t))['sequence']).toBe(4);
    // The scheduled sell leaves unseen; the second $2 sell leaves the level empty: 0.
    const [, second, scheduled] = ids;
    for (const id of [scheduled, second]) {
      expect((await ex.call('DELETE', `/v1/orders/${id ?? ''}`, provider.token)).status).toBe(200);
    }
    const gone = await client.until((e) => e.event === 'level' && e.data['gpus'] === 0);
    expect(gone.data).toMatchObject({ sequence: 5, side: 'ask', price: 2, gpus: 0, orders: 0 });
    expect((await orderbook(t))['sequence']).toBe(5);
    client.close();
  });

  it('a process that does not own the market answers 503 with Retry-After, as every route that needs it', async () => {
    const standby = buildApp(
      { logLevel: 'silent' },
      {
        db: ex.db,
        adminToken: 'standby-admin-token-0123456789',
        get market(): never {
          throw new GpuxError('unavailable', 'this exchange process does not own the market now');
        },
        secrets: new SecretBox(randomBytes(32)),
        serving: () => false,
      },
    );
    try {
      const r = await standby.inject({
        method: 'GET',
        url: '/v1/stream?gpu_type=h100&zone=us-west-1',
      });
      expect(r.statusCode).toBe(503);
      expect(r.headers['retry-after']).toBe('1');
      expect(r.json()).toMatchObject({ error: { code: 'unavailable' } });
    } finally {
      await standby.close();
    }
  });

  it('refuses a malformed Last-Event-ID or book with invalid_request', async () => {
    const bad = await SseClient.open(`${url}/v1/stream?gpu_type=h100&zone=us-west-1`, {
      'last-event-id': 'abc',
    });
    expect(bad.status).toBe(400);
    const nobook = await SseClient.open(`${url}/v1/stream?gpu_type=a100&zone=us-west-1`);
    expect(nobook.status).toBe(400);
    bad.close();
    nobook.close();
  });
});
