// How a change's account events are queued (migrations/0023): in the order
// recorded, as they are numbered later (numberer.ts, numberer.db.test.ts),
// and the platform's own accounts, which are in every fill, never given one.

import { describe, expect, it } from 'vitest';

import { PLATFORM_ACCOUNT_ID } from '../ledger/ledger.js';
import { accountEvent, queued, transactionEvents } from './events.js';

describe('account events', () => {
  it('queues the events in the order recorded, with what is stored of each', () => {
    const rows = queued([
      accountEvent('acc_b', 'order.filled', { n: 1 }, 1),
      accountEvent('acc_a', 'order.filled', {}, 2),
      accountEvent('acc_b', 'lease.provisioning', {}, 3),
    ]);
    expect(rows.map((r) => [r.account_id, r.kind, r.payload, r.created_ms])).toEqual([
      ['acc_b', 'order.filled', { n: 1 }, 1],
      ['acc_a', 'order.filled', {}, 2],
      ['acc_b', 'lease.provisioning', {}, 3],
    ]);
    expect(rows.every((r) => r.event_id.startsWith('evt_'))).toBe(true);
  });

  it('posts a transaction to each customer in it, with its side, never to the platform', () => {
    const events = transactionEvents(
      {
        id: 'txn_1',
        kind: 'lease_charge',
        orderId: 'ord_1',
        leaseId: 'lse_1',
        postings: [
          { accountId: 'acc_buyer', kind: 'buyer_charge', amountCents: -6400 },
          { accountId: 'acc_buyer', kind: 'buyer_fee', amountCents: -640 },
          { accountId: 'acc_seller', kind: 'seller_proceeds', amountCents: 6400 },
          { accountId: 'acc_seller', kind: 'seller_fee', amountCents: -640 },
          { accountId: PLATFORM_ACCOUNT_ID, kind: 'platform_fee', amountCents: 1280 },
        ],
      },
      5,
    );
    expect(events.map((e) => [e.account_id, e.data['amount'], e.data['entries']])).toEqual([
      ['acc_buyer', -70.4, ['buyer_charge', 'buyer_fee']],
      ['acc_seller', 57.6, ['seller_proceeds', 'seller_fee']],
    ]);
    expect(() => queued([accountEvent(PLATFORM_ACCOUNT_ID, 'order.filled', {}, 1)])).toThrow(
      /platform/,
    );
  });
});
