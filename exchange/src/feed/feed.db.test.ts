// The live feed across what can go wrong (issue 22): a client that missed
// events resumes with Last-Event-ID while the ring holds them and gets a
// snapshot when it does not; a batch whose commit fails is never shown (the
// watchers get a fresh snapshot); numbers go on across a restart, never
// given twice; the app's close ends each stream with a last event; and the
// limits per client address.

import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';

import type { Database } from '../db/database.js';
import { migrate } from '../db/migrate.js';
import { failingWrites } from '../db/testing/failing-writes.js';
import { freshPostgres } from '../db/testing/fresh-database.js';
import type { FreshDatabase } from '../db/testing/fresh-database.js';
import { testExchange } from '../market/testing/test-exchange.js';
import type { Book, Party, TestExchange } from '../market/testing/test-exchange.js';
import { BookCopy, SseClient } from './testing/sse-client.js';
import type { SseEvent } from './testing/sse-client.js';

const q = (b: Book): string => `gpu_type=${b.gpu_type}&zone=${b.zone}`;

/** The next batch write fails at commit time while set (its statement runs, then rolls back). */
let failNext = false;

function flaky(db: Database): Database {
  return failingWrites(db, () => {
    const fail = failNext;
    failNext = false;
    return fail;
  });
}

let fresh: FreshDatabase;
/** Streams a test opened, closed after it. */
const opened: SseClient[] = [];

async function open(url: string, headers?: Record<string, string>): Promise<SseClient> {
  const c = await SseClient.open(url, headers);
  opened.push(c);
  return c;
}

afterEach(() => {
  for (const c of opened.splice(0)) c.close();
});

beforeAll(async () => {
  fresh = await freshPostgres();
  await migrate(fresh.db);
});

afterAll(async () => {
  await fresh?.drop();
});

interface Seller {
  readonly book: Book;
  readonly provider: Party;
  /** A sell of 8 GPUs at `cents` on `on` (default: the exchange it was made on): one level event. */
  sell(cents: number, on?: TestExchange): Promise<void>;
}

async function seller(ex: TestExchange, book: Book): Promise<Seller> {
  const provider = await ex.party('provider');
  await ex.cluster(provider, 100, book.gpu_type, book.zone);
  return {
    book,
    provider,
    async sell(cents, on = ex) {
      const r = await on.call('POST', '/v1/orders', provider.token, {
        side: 'sell',
        ...book,
        gpu_count: 8,
        duration_hours: 48,
        limit_price: cents / 100,
      });
      expect(r.status, r.body).toBe(200);
    },
  };
}

/** The next `n` events of `c`. */
async function take(c: SseClient, n: number): Promise<SseEvent[]> {
  const out: SseEvent[] = [];
  for (let i = 0; i < n; i++) {
    const e = await c.next();
    if (e === undefined) throw new Error(`the stream ended after ${out.length} events`);
    out.push(e);
  }
  return out;
}

// Both ways the streams are written: by the feed writer process (the
// default) and by the exchange's own process (GPUX_FEED_WRITER=0).
describe.each([
  ['its feed writer process', true],
  ['the exchange process itself', false],
])('resuming, failures and restarts, the streams written by %s', (_, feedWriter) => {
  let ex: TestExchange;
  let url: string;
  // Each way on a database of its own: the tests count the books' numbers from 1.
  let own: FreshDatabase;
  const start = (): Promise<TestExchange> =>
    testExchange({ db: flaky(own.db), feed: { ringEvents: 8 }, feedWriter });

  beforeAll(async () => {
    own = await freshPostgres();
    await migrate(own.db);
    ex = await start();
    url = await ex.listen();
  });

  afterAll(async () => {
    await ex?.stop();
    await own?.drop();
  });

  it('a client that missed events resumes with exactly them while the ring holds them, else starts again from a snapshot', async () => {
    const s = await seller(ex, ex.book());
    const stream = `${url}/v1/stream?${q(s.book)}`;
    const steady = await open(stream);
    const copy = new BookCopy();
    copy.apply((await steady.next()) as SseEvent);
    const dropped = await open(stream);
    await dropped.next();
    await s.sell(200);
    await s.sell(201);
    // The client reads the first update, then loses the second and the connection.
    const [kept] = await take(dropped, 1);
    dropped.close();
    for (const cents of [202, 203, 204]) await s.sell(cents);
    const all = await take(steady, 5);
    for (const e of all) copy.apply(e);
    const resumed = await open(stream, { 'last-event-id': kept?.id ?? '' });
    expect(await take(resumed, 4)).toEqual(all.slice(1));

    // Nine more updates: the eight the ring holds no longer reach back to the client's.
    for (let cents = 205; cents < 214; cents++) await s.sell(cents);
    for (const e of await take(steady, 9)) copy.apply(e);
    const stale = await open(stream, { 'last-event-id': kept?.id ?? '' });
    const [snapshot] = await take(stale, 1);
    expect(snapshot?.event).toBe('snapshot');
    expect(snapshot?.data['sequence']).toBe(copy.sequence);
    const again = new BookCopy();
    again.apply(snapshot as SseEvent);
    expect(again.top(100)).toEqual(copy.top(100));
    // A number the book never reached (another database's?): a snapshot too.
    const ahead = await open(stream, { 'last-event-id': '999999999' });
    expect((await take(ahead, 1))[0]?.event).toBe('snapshot');
    // The last number: nothing missed, nothing sent until the next update.
    const current = await open(stream, { 'last-event-id': String(copy.sequence) });
    await s.sell(214);
    const [next] = await take(current, 1);
    expect(next?.event).toBe('level');
    expect(Number(next?.id)).toBe((copy.sequence ?? 0) + 1);
  });

  it('a batch that fails to commit is never shown: every watcher gets a fresh snapshot, the numbers go on from the database', async () => {
    const s = await seller(ex, ex.book());
    const client = await open(`${url}/v1/stream?${q(s.book)}`);
    const copy = new BookCopy();
    copy.apply((await client.next()) as SseEvent);
    await s.sell(300);
    copy.apply((await client.next()) as SseEvent);
    failNext = true;
    const lost = await ex.call('POST', '/v1/orders', s.provider.token, {
      side: 'sell',
      ...s.book,
      gpu_count: 8,
      duration_hours: 48,
      limit_price: 3.5,
    });
    expect(lost.status).toBe(500);
    const [renewed] = await take(client, 1);
    expect(renewed?.event).toBe('snapshot');
    expect(renewed?.data).toMatchObject({ sequence: 1, asks: [{ price: 3, gpus: 8, orders: 1 }] });
    await s.sell(301);
    const [next] = await take(client, 1);
    expect(next?.data).toMatchObject({ type: 'level', sequence: 2, price: 3.01 });
  });

  it('numbers go on across a restart: the next exchange starts from the last committed, and a client resumes with it', async () => {
    const s = await seller(ex, ex.book());
    const stream = `/v1/stream?${q(s.book)}`;
    const before = await open(`${url}${stream}`);
    const copy = new BookCopy();
    copy.apply((await before.next()) as SseEvent);
    for (const cents of [400, 401, 402]) await s.sell(cents);
    for (const e of await take(before, 3)) copy.apply(e);
    const last = copy.sequence ?? 0;
    expect(last).toBe(3);

    // The exchange stops: the stream ends with its reason.
    await ex.stop();
    const closed = await before.until((e) => e.event === 'closed');
    expect(closed.data).toMatchObject({ type: 'closed', reason: 'unavailable' });
    expect(await before.next()).toBeUndefined();

    ex = await start();
    url = await ex.listen();
    const reader = await ex.party('reader', { scopes: ['read'] });
    const rest = await ex.call('GET', `/v1/orderbook?${q(s.book)}`, reader.token);
    expect(rest.json['sequence']).toBe(last);
    // Resumed with the last number: nothing was missed, no snapshot.
    const resumed = await open(`${url}${stream}`, { 'last-event-id': String(last) });
    const anew = await open(`${url}${stream}`);
    const [snapshot] = await take(anew, 1);
    expect(snapshot?.data['sequence']).toBe(last);
    const again = new BookCopy();
    again.apply(snapshot as SseEvent);
    expect(again.top(100)).toEqual(copy.top(100));
    await s.sell(403, ex);
    const [next] = await take(resumed, 1);
    expect(next?.data).toMatchObject({ type: 'level', sequence: last + 1, price: 4.03 });
    copy.apply(next as SseEvent);
    // A client from before the restart, further behind: a snapshot.
    const behind = await open(`${url}${stream}`, { 'last-event-id': '1' });
    expect((await take(behind, 1))[0]?.data).toMatchObject({
      type: 'snapshot',
      sequence: last + 1,
    });
  });
});

describe('limits per client address', () => {
  it('at most GPUX_STREAMS_PER_ADDRESS streams open at once: one more is rate_limited', async () => {
    const ex = await testExchange({ db: fresh.db, streamsPerAddress: 2 });
    try {
      const url = `${await ex.listen()}/v1/stream?gpu_type=h100&zone=us-east-1`;
      const first = await open(url);
      const second = await open(url);
      expect([first.status, second.status]).toEqual([200, 200]);
      const third = await open(url);
      expect(third.status).toBe(429);
      expect(third.headers['retry-after']).toBe('5');
      expect(JSON.parse(await third.text())).toMatchObject({
        error: { code: 'rate_limited' },
      });
      // Once one is closed, another may open (the exchange hears of the close on its own time).
      first.close();
      for (;;) {
        const next = await open(url);
        if (next.status === 200) break;
        expect(next.status).toBe(429);
        next.close();
        await new Promise((r) => setTimeout(r, 20));
      }
    } finally {
      await ex.stop();
    }
  });

  it('the public endpoints that count allow GPUX_RATE_PUBLIC_PER_MINUTE requests per address; the probes are not counted', async () => {
    const ex = await testExchange({ db: fresh.db, publicRatePerMinute: 3 });
    try {
      const get = (
        url: string,
      ): Promise<{ statusCode: number; headers: Record<string, unknown> }> =>
        ex.app.inject({ method: 'GET', url, remoteAddress: '192.0.2.7' });
      for (let i = 0; i < 3; i++) expect((await get('/v1/openapi.json')).statusCode).toBe(200);
      const refused = await get('/v1/openapi.json');
      expect(refused.statusCode).toBe(429);
      expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
      // The stream counts against the same bucket.
      expect((await get('/v1/stream?gpu_type=h100&zone=us-west-1')).statusCode).toBe(429);
      for (let i = 0; i < 5; i++) expect((await get('/healthz')).statusCode).toBe(200);
      // Another address has its own bucket.
      const other = await ex.app.inject({
        method: 'GET',
        url: '/v1/openapi.json',
        remoteAddress: '192.0.2.8',
      });
      expect(other.statusCode).toBe(200);
    } finally {
      await ex.stop();
    }
  });
});
