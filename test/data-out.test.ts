// Data out of the exchange end to end (issue 22): the built exchange as a
// real process, killed with SIGKILL and started again on the same database,
// and clients that know only docs/api/market-data.md,
// docs/api/account-events.md and docs/api/webhooks.md. A feed client keeps a
// copy of a book from `GET /v1/stream` that equals `GET /v1/orderbook` after
// a burst of orders and cancels, and again after it resumed across the
// crash; the buyer's `GET /v1/account/stream` numbers its events 1, 2, 3…
// and resumes after the crash with no gap and no repeat; webhooks whose
// receiver fails at first lose no event across the crash.
//
// The feed and the account stream run on this machine's PostgreSQL. Webhooks
// may point at http://127.0.0.1 only in development, an exchange on its
// embedded database (docs/api/webhooks.md, "Endpoint URLs";
// exchange/src/server.ts allows loopback only without DATABASE_URL): they
// run on one, with its own data directory, restarted the same way.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// Not part of the exchange's package (left out of its dist): listed by path in test/tsconfig.json.
import { ACCOUNT_EVENT_KINDS } from '../exchange/src/account-events/events.js';
import { createDatabase, uniqueDatabaseName } from '../exchange/src/db/testing/admin-database.js';
import type { ScratchDatabase } from '../exchange/src/db/testing/admin-database.js';
import { callApi } from './support/api.js';
import type { ApiAnswer } from './support/api.js';
import { startExchangeProcess } from './support/exchange-process.js';
import type { ExchangeProcess } from './support/exchange-process.js';
import { AccountFollower, FeedFollower } from './support/followers.js';
import type { AccountEvent } from './support/followers.js';
import { until } from './support/until.js';
import { WebhookReceiver } from '../exchange/src/webhooks/testing/receiver.js';

const ADMIN_TOKEN = 'data-out-admin-token-0123456789abcdef';
const BOOK = { gpu_type: 'h100', zone: 'eu-west-1' } as const;

/** The exchange on one database, started again after a crash with the same settings. */
class Exchange {
  process: ExchangeProcess | undefined;
  constructor(private readonly env: NodeJS.ProcessEnv) {}

  get url(): string {
    return this.process?.url ?? '';
  }

  async start(): Promise<void> {
    this.process = await startExchangeProcess({
      ...this.env,
      GPUX_ADMIN_TOKEN: ADMIN_TOKEN,
      // A burst of orders from one account, under the documented limits' settings.
      GPUX_RATE_ORDERS_PER_MINUTE: '1000',
      GPUX_RATE_CANCELS_PER_MINUTE: '1000',
      GPUX_RATE_QUERIES_PER_MINUTE: '1000',
    });
  }

  /** SIGKILL, then a start on the same database. */
  async crashAndRestart(): Promise<void> {
    await this.process?.stop('SIGKILL');
    await this.start();
  }

  output = (): string => this.process?.output() ?? '';

  async call(method: string, path: string, token: string, body?: unknown): Promise<ApiAnswer> {
    const a = await callApi(this.url, method, path, token, body);
    if (a.status >= 300) throw new Error(`${method} ${path}: ${a.status} ${a.text}`);
    return a;
  }
}

interface Parties {
  readonly provider: string;
  readonly buyer: string;
}

/** A provider with a cluster of `nodes` 8-GPU nodes in BOOK, and a buyer, through the admin API. */
async function onboard(ex: Exchange, nodes: number): Promise<Parties> {
  const account = async (name: string, scopes: string[]): Promise<Record<string, unknown>> =>
    (await ex.call('POST', '/v1/admin/accounts', ADMIN_TOKEN, { name, organization: name, scopes }))
      .json;
  const provider = await account('farm', ['trade', 'read', 'leases', 'provider']);
  const buyer = await account('lab', ['trade', 'read', 'leases']);
  await ex.call('POST', '/v1/admin/clusters', ADMIN_TOKEN, {
    provider_account_id: provider['account_id'],
    ...BOOK,
    nodes: Array.from({ length: nodes }, (_, i) => ({ hostname: `gpu-${i}` })),
  });
  return { provider: provider['token'] as string, buyer: buyer['token'] as string };
}

/** A limit order of 8 GPUs in BOOK; its id. */
async function order(
  ex: Exchange,
  token: string,
  side: 'buy' | 'sell',
  price: number,
): Promise<string> {
  const a = await ex.call('POST', '/v1/orders', token, {
    side,
    ...BOOK,
    gpu_count: 8,
    duration_hours: side === 'sell' ? 72 : 2,
    limit_price: price,
  });
  return a.json['order_id'] as string;
}

const cents = (c: number): number => c / 100;

/** GET /v1/orderbook, every level (≤ 50 a side). */
async function orderbook(ex: Exchange, token: string): Promise<Record<string, unknown>> {
  const q = `gpu_type=${BOOK.gpu_type}&zone=${BOOK.zone}&depth=50`;
  return (await ex.call('GET', `/v1/orderbook?${q}`, token)).json;
}

/** The feed's copy equals GET /v1/orderbook at the book's sequence (no order is in flight). */
async function copyEqualsBook(ex: Exchange, feed: FeedFollower, token: string): Promise<number> {
  const book = await orderbook(ex, token);
  const sequence = book['sequence'] as number;
  await feed.reach(sequence, ex.output);
  expect(feed.copy.top(50)).toEqual({ bids: book['bids'], asks: book['asks'] });
  return sequence;
}

/** The order ids of `events` of kind `type`, sorted. */
function ordersOf(events: readonly AccountEvent[], type: string): string[] {
  return events
    .filter((e) => e.type === type)
    .map((e) => e.data['order_id'] as string)
    .sort();
}

const range = (from: number, to: number): number[] =>
  Array.from({ length: to - from + 1 }, (_, i) => from + i);

describe('the live feed and the account stream across a SIGKILL, on PostgreSQL', () => {
  let database: ScratchDatabase | undefined;
  let ex: Exchange;
  let parties: Parties;
  const feed = new FeedFollower(BOOK.gpu_type, BOOK.zone);
  // A second feed client that lost its connection some updates before the crash.
  const behind = new FeedFollower(BOOK.gpu_type, BOOK.zone);
  let account: AccountFollower;
  /** The buyer's orders: filled ones, cancelled ones. */
  const filled: string[] = [];
  const cancelled: string[] = [];
  /** The provider's sells of the burst. */
  const sells: string[] = [];

  beforeAll(async () => {
    database = await createDatabase(uniqueDatabaseName('gpux_e2e'));
    // No NATS here: the in-process bus on purpose (no agent is in this test).
    ex = new Exchange({ DATABASE_URL: database.url, GPUX_IN_PROCESS_BUS: '1', GPUX_DEMO: '0' });
    await ex.start();
    parties = await onboard(ex, 30);
    account = new AccountFollower(parties.buyer);
  }, 60_000);

  afterAll(async () => {
    feed.close();
    behind.close();
    account?.close();
    await ex?.process?.stop('SIGKILL');
    await database?.drop();
  });

  it('keeps a copy of the book equal to GET /v1/orderbook through a burst of orders and cancels, and numbers the buyer’s events 1, 2, 3…', async () => {
    const { provider, buyer } = parties;
    await feed.connect(ex.url);
    await behind.connect(ex.url);
    await account.connect(ex.url);
    // Sells at 2.00 to 2.35 (two per level), bids at 1.50 to 1.75, a few at a time.
    const bids: string[] = [];
    for (let i = 0; i < 16; i += 4) {
      const batch = range(i, i + 3).flatMap((k) => [
        order(ex, provider, 'sell', cents(200 + 5 * (k % 8))),
        order(ex, buyer, 'buy', cents(150 + 5 * (k % 6))),
      ]);
      for (const [k, id] of (await Promise.all(batch)).entries()) {
        (k % 2 === 0 ? sells : bids).push(id);
      }
    }
    // Bids that cross: each fills 8 GPUs from the best ask.
    for (let i = 0; i < 4; i++) filled.push(await order(ex, buyer, 'buy', cents(210)));
    // Some cancelled, from both sides at once.
    cancelled.push(...bids.slice(0, 5));
    await Promise.all([
      ...cancelled.map((id) => ex.call('DELETE', `/v1/orders/${id}`, buyer)),
      ...sells.slice(10, 13).map((id) => ex.call('DELETE', `/v1/orders/${id}`, provider)),
    ]);
    // One more after the rest: its events come last (docs: numbered in commit order).
    const last = await order(ex, buyer, 'buy', cents(160));
    await ex.call('DELETE', `/v1/orders/${last}`, buyer);
    cancelled.push(last);

    const sequence = await copyEqualsBook(ex, feed, provider);
    expect(feed.firstEvents[0]).toMatchObject({ event: 'snapshot', data: { sequence: 0 } });
    expect(feed.updates).toEqual(range(1, sequence));
    expect(feed.copy.trades).toBe(4);

    await account.cancellation(last, ex.output);
    expect(account.events.map((e) => e.seq)).toEqual(range(1, account.last));
    expect(ordersOf(account.events, 'order.filled')).toEqual([...filled].sort());
    expect(ordersOf(account.events, 'order.cancelled')).toEqual([...cancelled].sort());
    expect(ordersOf(account.events, 'lease.provisioning')).toEqual([...filled].sort());
    expect(account.events.filter((e) => e.type === 'transaction.posted')).toHaveLength(4);
  });

  it('resumes after SIGKILL and a restart on the same database: no number repeated or skipped, the copy equal to the book again', async () => {
    const { provider, buyer } = parties;
    // `behind` stops reading before the last updates, `account` before the
    // last events; `feed` has every committed update.
    behind.close();
    account.close();
    const accountAt = account.last;
    const behindAt = behind.lastId;
    const before = feed.lastId;
    await order(ex, provider, 'sell', cents(240));
    const resting = await order(ex, buyer, 'buy', cents(155));
    const committed = await copyEqualsBook(ex, feed, provider);
    // The buyer's event for this one is read only after the crash.
    const lastBid = await order(ex, buyer, 'buy', cents(170));
    await ex.call('DELETE', `/v1/orders/${lastBid}`, buyer);
    cancelled.push(lastBid);
    const atKill = await copyEqualsBook(ex, feed, provider);
    expect(atKill).toBeGreaterThan(before);
    expect(behindAt).toBeLessThan(committed);

    await ex.crashAndRestart();
    // The book and its number come back from the database.
    expect((await orderbook(ex, provider))['sequence']).toBe(atKill);
    // Resuming from the last committed number: nothing missed, no snapshot
    // (docs/api/market-data.md, "Resuming"). From further behind: the events held
    // were in the dead process's memory, so a snapshot at the current number.
    await feed.connect(ex.url, feed.lastId);
    await behind.connect(ex.url, behindAt);
    await account.connect(ex.url);
    await behind.reach(atKill, ex.output);
    expect(behind.firstEvents.at(-1)).toMatchObject({
      event: 'snapshot',
      data: { sequence: atKill },
    });

    // More orders on the new process: fills, a cancel, new levels.
    await order(ex, provider, 'sell', cents(205));
    filled.push(await order(ex, buyer, 'buy', cents(210)));
    filled.push(await order(ex, buyer, 'buy', cents(210)));
    await Promise.all([
      ex.call('DELETE', `/v1/orders/${resting}`, buyer),
      ex.call('DELETE', `/v1/orders/${sells[13]}`, provider),
      order(ex, buyer, 'buy', cents(165)),
    ]);
    cancelled.push(resting);
    const after = await copyEqualsBook(ex, feed, provider);
    await behind.reach(after, ex.output);
    expect(behind.copy.top(50)).toEqual(feed.copy.top(50));
    // One connection before the crash, one after; only the one from 0 began with a snapshot.
    expect(feed.firstEvents).toHaveLength(2);
    expect(feed.firstEvents[1]).toMatchObject({ data: { sequence: atKill + 1 } });
    expect(feed.firstEvents[1]?.event).not.toBe('snapshot');
    expect(feed.copy.snapshots).toBe(1);
    expect(feed.updates).toEqual(range(1, after));
    expect(feed.copy.trades).toBe(6);

    await account.cancellation(resting, ex.output);
    // Resumed after its last event: the ones made before the crash first.
    expect(account.readies).toEqual([0, accountAt]);
    expect(account.events[accountAt]).toMatchObject({
      type: 'order.cancelled',
      data: { order_id: lastBid },
    });
    expect(account.events.map((e) => e.seq)).toEqual(range(1, account.last));
    expect(new Set(account.events.map((e) => e.id)).size).toBe(account.events.length);
    expect(ordersOf(account.events, 'order.filled')).toEqual([...filled].sort());
    expect(ordersOf(account.events, 'order.cancelled')).toEqual([...cancelled].sort());
    // What a client starting from 0 now reads is what this one put together.
    const fresh = new AccountFollower(buyer);
    await fresh.connect(ex.url);
    await fresh.waitFor(`event ${account.last}`, (e) => e.seq === account.last, ex.output);
    fresh.close();
    expect(fresh.events.slice(0, account.last)).toEqual(account.events);
  });
});

interface Delivery {
  readonly seq: number | null;
  readonly status: string;
  readonly attempts: { readonly status_code: number | null }[];
}

describe('webhooks across a SIGKILL, on the embedded database', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'gpux-data-out-'));
  const receiver = new WebhookReceiver();
  let ex: Exchange;

  beforeAll(async () => {
    await receiver.listen();
    ex = new Exchange({
      DATABASE_URL: '',
      NATS_URL: '',
      GPUX_DATA_DIR: dataDir,
      // The webhooks' secrets are sealed with it: the same key after the restart.
      GPUX_SECRET_KEY: Buffer.alloc(32, 7).toString('base64'),
    });
    await ex.start();
  }, 60_000);

  afterAll(async () => {
    await ex?.process?.stop('SIGKILL');
    await receiver.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it(
    'delivers every event the account stream shows, signed, in order, after failures and a crash',
    { timeout: 60_000 },
    async () => {
      const { provider, buyer } = await onboard(ex, 8);
      // Three endpoints for every kind of event (all the buyer's), each
      // answering 500 to its first delivery: each holds its later events back
      // until that one's retry (10 s later) succeeds.
      const endpoints = ['a', 'b', 'c'].map((name) => receiver.endpoint(name, 1));
      const ids: string[] = [];
      for (const e of endpoints) {
        const w = await ex.call('POST', '/v1/webhooks', buyer, {
          url: e.url,
          events: ACCOUNT_EVENT_KINDS,
        });
        expect(w.status).toBe(201);
        e.secret = w.json['secret'] as string;
        ids.push(w.json['id'] as string);
      }
      // Before the crash a fill (the buyer's order, lease and charge), after it a cancellation.
      await order(ex, provider, 'sell', cents(200));
      await order(ex, buyer, 'buy', cents(200));
      /** Each endpoint's deliveries, newest first. */
      const deliveries = async (): Promise<Delivery[][]> =>
        Promise.all(
          ids.map(async (id) => {
            const d = await ex.call('GET', `/v1/webhooks/${id}/deliveries`, buyer);
            return d.json['deliveries'] as Delivery[];
          }),
        );
      // Killed once every endpoint's first attempt is recorded as failed: the retries are rows.
      await until(
        'every endpoint’s first delivery to have failed once',
        async () =>
          (await deliveries()).every((ds) =>
            ds.some((d) => d.seq === 1 && d.status === 'pending' && d.attempts.length === 1),
          ),
        { output: ex.output },
      );
      expect(endpoints.map((e) => e.receipts.map((r) => r.status))).toEqual([[500], [500], [500]]);
      await ex.crashAndRestart();
      const last = await order(ex, buyer, 'buy', cents(150));
      await ex.call('DELETE', `/v1/orders/${last}`, buyer);

      const account = new AccountFollower(buyer);
      await account.connect(ex.url);
      await account.cancellation(last, ex.output);
      account.close();
      const shown = account.events.map((e) => e.id);
      expect(shown.length).toBeGreaterThanOrEqual(4);
      await until(
        'every event the stream showed to reach every endpoint',
        () => endpoints.every((e) => shown.every((id) => e.delivered.has(id))),
        { output: ex.output, timeoutMs: 40_000 },
      );
      for (const e of endpoints) {
        expect(e.refused).toEqual([]);
        // One at a time, in the account's order: first deliveries by rising seq.
        const firsts = [...new Map(e.receipts.map((r) => [r.eventId, r.seq])).values()];
        expect(firsts).toEqual([...firsts].sort((x, y) => (x ?? 0) - (y ?? 0)));
        expect(e.receipts[0]).toMatchObject({ seq: 1, status: 500 });
        expect(e.receipts[1]).toMatchObject({ seq: 1, status: 200 });
      }
      for (const ds of await deliveries()) {
        const first = ds.find((d) => d.seq === 1);
        expect(first?.status).toBe('delivered');
        expect(first?.attempts.map((a) => a.status_code)).toEqual([500, 200]);
      }
    },
  );
});
