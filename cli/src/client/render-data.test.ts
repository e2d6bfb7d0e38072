// The human output of candles, account events and webhooks, and the range
// `gpux candles` asks for without --start.

import { describe, expect, it } from 'vitest';

import type { Schemas } from './api.js';
import { candleRange } from './data-commands.js';
import {
  eventLine,
  showCandles,
  showCreatedWebhook,
  showDeliveries,
  showWebhooks,
} from './render-data.js';

const plain = { colour: false, timeZone: 'UTC' };

describe('candleRange', () => {
  const now = Date.parse('2026-11-27T10:30:00Z');
  it('without --start: the last n intervals, the one in progress included', () => {
    expect(candleRange(3600, 24, {}, now)).toEqual({ start: '2026-11-26T11:30:00.000Z' });
    expect(candleRange(60, 1, {}, now)).toEqual({ start: '2026-11-27T10:30:00.000Z' });
  });

  it('with --end: the n intervals before it (its interval included when it is not on a start)', () => {
    expect(candleRange(300, 12, { end: '2026-11-27T10:00:00Z' }, now)).toEqual({
      start: '2026-11-27T09:00:00.000Z',
      end: '2026-11-27T10:00:00Z',
    });
    expect(candleRange(300, 12, { end: '2026-11-27T10:01:00Z' }, now)).toMatchObject({
      start: '2026-11-27T09:05:00.000Z',
    });
  });

  it('with --start: n intervals from its own, or up to now when that is sooner', () => {
    expect(candleRange(300, 12, { start: '2026-11-27T08:02:00Z' }, now)).toEqual({
      start: '2026-11-27T08:02:00Z',
      end: '2026-11-27T09:00:00.000Z',
    });
    expect(candleRange(300, 12, { start: '2026-11-27T10:00:00Z' }, now)).toEqual({
      start: '2026-11-27T10:00:00Z',
    });
    const both = { start: '2026-11-01T00:00:00Z', end: '2026-11-02T00:00:00Z' };
    expect(candleRange(3600, 5, both, now)).toEqual(both);
  });
});

describe('showCandles', () => {
  it('a row per candle, prices in dollars per GPU-hour, and where the next range starts', () => {
    const candles: Schemas['Candles'] = {
      gpu_type: 'h100',
      zone: 'us-west-1',
      granularity: 60,
      start: '2026-11-22T10:00:00.000Z',
      end: '2026-11-22T10:05:00.000Z',
      candles: [
        {
          time: '2026-11-22T10:00:00.000Z',
          open: 2,
          high: 2.3,
          low: 1.9,
          close: 1.9,
          volume_gpus: 32,
          volume_gpu_hours: 72,
          trades: 4,
        },
      ],
    };
    const text = showCandles(candles, plain);
    expect(text.split('\n')).toEqual([
      'h100 in us-west-1, 1 min candles, $/GPU-h',
      'time                     open   high   low    close  gpus  gpu-hours  trades',
      '2026-11-22 10:00:00 UTC  $2.00  $2.30  $1.90  $1.90  32    72         4',
      '2026-11-22 10:00:00 UTC to 2026-11-22 10:05:00 UTC; next: --start 2026-11-22T10:05:00.000Z',
      '',
    ]);
    // The range ends in the future (it holds now): no next range yet.
    expect(showCandles(candles, plain, Date.parse('2026-11-22T10:04:00Z'))).not.toContain('next');
  });
});

describe('eventLine', () => {
  const at = '2026-11-22T10:00:00.000Z';
  it('a fill, a lease, a ledger transaction: one line each', () => {
    const fill = eventLine(
      {
        id: 'evt_1',
        seq: 1,
        type: 'order.filled',
        created_at: at,
        data: {
          order_id: 'ord_1',
          side: 'buy',
          gpu_type: 'h100',
          zone: 'us-west-1',
          gpu_count: 8,
          filled_gpus: 8,
          fill: { id: 'trd_1', gpus: 8, price: 2.5, hours: 4, lease_id: 'lse_1', matched_at: at },
        },
      },
      plain,
    );
    expect(fill).toBe(
      '2026-11-22 10:00:00 UTC  #1  order.filled  ord_1 buy 8xh100 in us-west-1: 8 GPUs at $2.50/GPU-h for 4 h (8 of 8 filled), lease lse_1\n',
    );
    const lease = {
      lease_id: 'lse_1',
      gpu_type: 'h100',
      zone: 'us-west-1',
      gpu_count: 8,
      status: 'failed',
      end_reason: 'provisioning_timeout',
      refund: 80,
    };
    expect(
      eventLine({ id: 'e', seq: 2, type: 'lease.failed', created_at: at, data: lease }, plain),
    ).toContain(
      'lease.failed  lse_1 8xh100 in us-west-1: failed (provisioning_timeout), refund $80.00',
    );
    const txn = {
      transaction_id: 'txn_1',
      kind: 'lease_charge',
      amount: -88,
      entries: ['buyer_charge', 'buyer_fee'],
      order_id: 'ord_1',
      lease_id: 'lse_1',
    };
    expect(
      eventLine({ id: 'e', seq: 3, type: 'transaction.posted', created_at: at, data: txn }, plain),
    ).toContain('#3  transaction.posted  txn_1 lease_charge -$88.00 (ord_1 lse_1)');
  });

  it('a kind this version does not know shows its data as JSON', () => {
    expect(
      eventLine(
        { id: 'e', seq: 4, type: 'account.new_kind', created_at: at, data: { a: 1 } },
        plain,
      ),
    ).toContain('account.new_kind  {"a":1}');
  });
});

describe('webhooks', () => {
  const hook = {
    id: 'whk_1',
    url: 'https://hooks.example.com/gpux',
    events: ['order.filled' as const, 'lease.active' as const],
    created_at: '2026-11-22T10:00:00.000Z',
  };

  it('the secret of a new endpoint, with the note to keep it', () => {
    const text = showCreatedWebhook({ ...hook, secret: 'whsec_abc' }, plain);
    expect(text).toMatch(/^secret +whsec_abc$/m);
    expect(text).toContain('Keep the secret now: it is shown this once');
  });

  it('the list without secrets; deliveries with their last attempt', () => {
    expect(showWebhooks({ webhooks: [hook] }, plain)).toMatch(
      /^whk_1 +https:\/\/hooks\.example\.com\/gpux +order\.filled,lease\.active +2026-11-22 10:00:00 UTC$/m,
    );
    const delivery = {
      id: 'whd_1',
      event_id: 'evt_1',
      type: 'order.filled',
      seq: 1,
      status: 'delivered' as const,
      next_attempt_at: null,
      created_at: '2026-11-22T10:00:00.120Z',
      finished_at: '2026-11-22T10:01:10.400Z',
      attempts: [
        { attempt: 1, at: '', status_code: null, error: 'connect ECONNREFUSED', duration_ms: 3 },
        { attempt: 2, at: '', status_code: 200, error: null, duration_ms: 40 },
      ],
    };
    const text = showDeliveries({ deliveries: [delivery], total: 3, limit: 1, offset: 0 }, plain);
    expect(text).toMatch(/^whd_1 +1 +order\.filled +delivered +2 +HTTP 200 in 40 ms +2026-11-22/m);
    expect(text).toContain('1–1 of 3; next page: --offset 1');
  });
});
