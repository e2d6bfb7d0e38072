import { describe, expect, it } from 'vitest';

import { MatchingEngine, bookKey } from './matching-engine.js';
import { OrderBook } from './order-book.js';

const T0 = Date.UTC(2026, 10, 22);

describe('MatchingEngine: one book per (gpu_type, zone)', () => {
  it('keeps books apart: an ask in one zone does not fill a bid in another', () => {
    // given
    const engine = new MatchingEngine();
    engine.book('h100', 'us-west-1').place(
      {
        id: 's1',
        side: 'sell',
        type: 'limit',
        accountId: 'p',
        orgId: 'P',
        nodes: 1,
        durationHours: 24,
        limitPrice: 200,
        clusterId: 'c1',
      },
      T0,
    );
    // when
    const r = engine.book('h100', 'eu-west-1').place(
      {
        id: 'b1',
        side: 'buy',
        type: 'limit',
        accountId: 'c',
        orgId: 'C',
        nodes: 1,
        durationHours: 1,
        limitPrice: 250,
      },
      T0,
    );
    // then
    expect(r).toMatchObject({ ok: true, state: 'resting' });
    expect(engine.book('h100', 'us-west-1').snapshot(5).bestAsk).toBe(200);
    expect(engine.book('h100', 'eu-west-1').snapshot(5).bestBid).toBe(250);
    expect(engine.keys().sort()).toEqual(['h100/eu-west-1', 'h100/us-west-1']);
  });

  it('returns the same book for the same key, and an installed book replaces it', () => {
    const engine = new MatchingEngine();
    expect(engine.book('b200', 'us-east-1')).toBe(engine.book('b200', 'us-east-1'));
    const restored = OrderBook.restore([], null, T0);
    engine.install('b200', 'us-east-1', restored);
    expect(engine.book('b200', 'us-east-1')).toBe(restored);
    expect(bookKey('b200', 'us-east-1')).toBe('b200/us-east-1');
  });
});
