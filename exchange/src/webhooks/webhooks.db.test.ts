// Webhooks end to end (issue 22, docs/api/webhooks.md), over real HTTP: a
// receiver that checks every signature and the order of the account's
// events, fails for a while (the retries show in the deliveries), and an
// exchange restart in between that loses nothing; the test send; the URLs
// refused; another account's endpoints out of reach.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { testExchange } from '../market/testing/test-exchange.js';
import type { Book, Party, Reply, TestExchange } from '../market/testing/test-exchange.js';
import { WebhookDispatcher } from './dispatcher.js';
import { deliveredSeqs as delivered, WebhookReceiver } from './testing/receiver.js';
import type { ReceiverEndpoint } from './testing/receiver.js';

/** Waits (without a deadline of its own: vitest's is the bound) until `cond` holds. */
async function until(cond: () => boolean | Promise<boolean>): Promise<void> {
  while (!(await cond())) await new Promise((r) => setTimeout(r, 10));
}

/** A fresh book where `tag`'s provider sells `nodes` nodes of 8 GPUs for 24 h at $2/GPU-h. */
async function selling(tag: string, nodes: number): Promise<Book> {
  const book = ex.book();
  const provider = await ex.party(`${tag}-provider`);
  await ex.cluster(provider, nodes, book.gpu_type, book.zone);
  const sell = await ex.call('POST', '/v1/orders', provider.token, {
    side: 'sell',
    ...book,
    gpu_count: 8 * nodes,
    duration_hours: 24,
    limit_price: 2,
  });
  expect(sell.status, sell.body).toBe(200);
  return book;
}

/** `buyer` buys one node (8 GPUs) for 4 h at market in `book`: filled. */
async function buyNode(buyer: Party, book: Book): Promise<Reply> {
  const buy = await ex.call('POST', '/v1/orders', buyer.token, {
    side: 'buy',
    ...book,
    gpu_count: 8,
    duration_hours: 4,
  });
  expect(buy.json['status']).toBe('filled');
  return buy;
}

const fast = (ex: TestExchange): WebhookDispatcher =>
  new WebhookDispatcher(ex.db, ex.secrets, { development: true, retryBaseMs: 20, intervalMs: 10 });

/** The first exchange, whose database the later ones reuse (close() drops it). */
let first: TestExchange;
let ex: TestExchange;
const receiver = new WebhookReceiver();
/** The endpoint most tests register (checks signatures; failFirst answers 500). */
let hook: ReceiverEndpoint;

beforeAll(async () => {
  first = await testExchange();
  ex = first;
  await receiver.listen();
  hook = receiver.endpoint('hooks', 0);
});

afterAll(async () => {
  await receiver.close();
  if (ex !== first) await ex.stop();
  await first.close();
});

describe('webhooks', () => {
  it('delivers the account’s events signed and in order, retries a failing receiver, and loses nothing across a restart', async () => {
    const book = await selling('hook', 1);
    const buyer = await ex.party('hook-buyer');
    const created = await ex.call('POST', '/v1/webhooks', buyer.token, {
      url: hook.url,
      events: ['order.filled', 'lease.provisioning', 'lease.active', 'transaction.posted'],
    });
    expect(created.status).toBe(201);
    const id = String(created.json['id']);
    hook.secret = String(created.json['secret']);
    expect(hook.secret).toMatch(/^whsec_/);
    const listed = await ex.call('GET', '/v1/webhooks', buyer.token);
    expect(listed.json['webhooks']).toEqual([
      {
        id,
        url: hook.url,
        events: created.json['events'],
        created_at: created.json['created_at'],
      },
    ]);

    // The receiver fails the first three attempts.
    hook.failFirst = 3;
    const buy = await buyNode(buyer, book);
    let dispatcher = fast(ex);
    dispatcher.start();
    await until(() => delivered(hook).length === 3);
    expect(delivered(hook)).toEqual([1, 2, 3]);
    const deliveries = await ex.call('GET', `/v1/webhooks/${id}/deliveries`, buyer.token);
    expect(deliveries.status).toBe(200);
    const list = deliveries.json['deliveries'] as Record<string, unknown>[];
    const first = list.find((d) => d['seq'] === 1);
    expect(first).toMatchObject({ type: 'order.filled', status: 'delivered' });
    const attempts = first?.['attempts'] as Record<string, unknown>[];
    expect(attempts.map((a) => a['status_code'])).toEqual([500, 500, 500, 200]);
    expect(attempts[0]).toMatchObject({ attempt: 1, error: 'HTTP 500' });

    // The receiver is down while the lease goes active, and the exchange restarts.
    hook.failFirst = Number.MAX_SAFE_INTEGER;
    const tried = hook.receipts.length;
    await ex.leaseReady(buy.json['lease_id'] as string, book);
    await until(() => hook.receipts.length > tried);
    await dispatcher.stop();
    await ex.stop();
    const again = await testExchange({ db: ex.db, secrets: ex.secrets });
    try {
      hook.failFirst = 0;
      dispatcher = fast(again);
      dispatcher.start();
      await until(() => delivered(hook).length === 4);
      expect(delivered(hook)).toEqual([1, 2, 3, 4]);
      expect(hook.receipts.find((r) => r.seq === 4)?.type).toBe('lease.active');
      expect(hook.refused).toEqual([]);

      // A test send, queued behind nothing now.
      const test = await again.call('POST', `/v1/webhooks/${id}/test`, buyer.token);
      expect(test.status).toBe(202);
      await until(() => hook.receipts.some((r) => r.type === 'webhook.test' && r.status === 200));

      // Deleted: listed no more.
      expect((await again.call('DELETE', `/v1/webhooks/${id}`, buyer.token)).status).toBe(200);
      expect((await again.call('GET', '/v1/webhooks', buyer.token)).json['webhooks']).toEqual([]);
    } finally {
      await dispatcher.stop();
      await again.stop();
    }
  });
});

describe('webhook requests refused', () => {
  let owner: Party;
  let id: string;

  beforeAll(async () => {
    // The restart test above stopped `ex`; these run on an exchange of their own.
    ex = await testExchange({ db: ex.db, secrets: ex.secrets });
    owner = await ex.party('hook-owner');
    const r = await ex.call('POST', '/v1/webhooks', owner.token, {
      url: hook.url,
      events: ['order.cancelled'],
    });
    id = String(r.json['id']);
  });

  it('refuses URLs that are not https, or reach a private, loopback or metadata address', async () => {
    for (const url of [
      'http://example.com/hook',
      'https://10.1.2.3/hook',
      'https://169.254.169.254/latest/meta-data',
      'https://[fd00::1]/hook',
      'ftp://example.com/hook',
      'https://user:pass@example.com/hook',
      'not a url',
    ]) {
      const r = await ex.call('POST', '/v1/webhooks', owner.token, {
        url,
        events: ['order.filled'],
      });
      expect(r.status, url).toBe(400);
      expect(r.json['error']).toMatchObject({ code: 'invalid_request', field: 'url' });
    }
    const kinds = await ex.call('POST', '/v1/webhooks', owner.token, {
      url: hook.url,
      events: ['order.eaten'],
    });
    expect(kinds.status).toBe(400);
  });

  it('needs the trade scope to register, and keeps another account’s endpoints out of reach', async () => {
    const reader = await ex.party('hook-reader', { scopes: ['read'] });
    const r = await ex.call('POST', '/v1/webhooks', reader.token, {
      url: hook.url,
      events: ['order.filled'],
    });
    expect(r.status).toBe(403);
    expect((await ex.call('GET', `/v1/webhooks/${id}/deliveries`, reader.token)).status).toBe(404);
    expect((await ex.call('POST', `/v1/webhooks/${id}/test`, reader.token)).status).toBe(403);
    const other = await ex.party('hook-other');
    expect((await ex.call('DELETE', `/v1/webhooks/${id}`, other.token)).status).toBe(404);
    expect((await ex.call('GET', '/v1/webhooks', other.token)).json['webhooks']).toEqual([]);
    expect((await ex.call('DELETE', `/v1/webhooks/${id}`, owner.token)).status).toBe(200);
  });
});

describe('a busy account', () => {
  it('gets a burst of events in one round, each sent once the one before is delivered, in order', async () => {
    const book = await selling('burst', 3);
    const buyer = await ex.party('burst-buyer');
    const hooks = receiver.endpoint('burst', 0);
    const kinds = ['order.filled', 'lease.provisioning', 'transaction.posted'];
    const created = await ex.call('POST', '/v1/webhooks', buyer.token, {
      url: hooks.url,
      events: kinds,
    });
    hooks.secret = String(created.json['secret']);
    for (let i = 0; i < 3; i++) await buyNode(buyer, book);
    // Each fill tells the buyer three things of these kinds; the numberer
    // numbers them within moments.
    const numbered = async (): Promise<number[]> =>
      (
        await ex.db.query<{ seq: number }>(
          'SELECT seq FROM account_events WHERE account_id = $1 AND kind = ANY($2) ORDER BY seq',
          [buyer.accountId, kinds],
        )
      ).map((r) => Number(r.seq));
    await until(async () => (await numbered()).length === 9);
    // A dispatcher whose rounds the test runs: one round sends them all.
    const dispatcher = new WebhookDispatcher(ex.db, ex.secrets, { development: true });
    try {
      await dispatcher.round();
      expect(delivered(hooks)).toEqual(await numbered());
      expect(hooks.receipts.every((r) => r.status === 200)).toBe(true);
      expect(hooks.refused).toEqual([]);
    } finally {
      await dispatcher.stop();
    }
  });
});
