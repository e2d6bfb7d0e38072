// How a statement's account events are numbered (migrations/0020): each
// account's events ranked 1…n in the order recorded, the counters in one
// order of accounts (no two statements lock them crosswise), and the
// platform's own accounts, which are in every fill, never given one.

import { describe, expect, it } from 'vitest';

import { PLATFORM_ACCOUNT_ID } from '../ledger/ledger.js';
import { accountEvent, numbered, transactionEvents } from './events.js';

describe('account events', () => {
  it('ranks each account’s events in order and sorts the counters by account', () => {
    const { heads, rows } = numbered([
      accountEvent('acc_b', 'order.filled', {}, 1),
      accountEvent('acc_a', 'order.filled', {}, 1),
      accountEvent('acc_b', 'lease.provisioning', {}, 1),
    ]);
    expect(heads).toEqual([
      { account_id: 'acc_a', n: 1 },
      { account_id: 'acc_b', n: 2 },
    ]);
    expect(rows.map((r) => [r.account_id, r.rank, r.n, r.kind])).toEqual([
      ['acc_b', 1, 2, 'order.filled'],
      ['acc_a', 1, 1, 'order.filled'],
      ['acc_b', 2, 2, 'lease.provisioning'],
    ]);
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
    expect(() => numbered([accountEvent(PLATFORM_ACCOUNT_ID, 'order.filled', {}, 1)])).toThrow(
      /platform/,
    );
  });
});
