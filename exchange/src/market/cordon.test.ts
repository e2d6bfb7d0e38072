// setCordon on its own (market/cordon.ts): who holds a cordon decides who may
// lift it (issue 23, migrations/0022). An operator's cordon outranks the
// provider's: the provider cannot lift it, and an operator cordoning a
// cluster its provider cordoned takes the cordon over without withdrawing
// anything again.

import { newId } from '@gpux/shared';
import { beforeEach, describe, expect, it } from 'vitest';

import { OrderBook } from '../matching/index.js';
import { BookState } from './book-state.js';
import { addNode, emptyCluster } from './capacity.js';
import { ChangeSet } from './change-set.js';
import { setCordon } from './cordon.js';
import type { CordonedBy } from './cordon.js';
import { newOrderRow } from './rows.js';

const T0 = Date.UTC(2026, 10, 27);
let state: BookState;

beforeEach(() => {
  state = new BookState('h100', 'us-west-1', new OrderBook(), 0, {
    provisioningTimeoutMs: 5 * 60_000,
  });
  const c = emptyCluster('cls_a', 'acc_provider');
  addNode(c, { id: 'nod_0', hostname: 'node-0.example', status: 'online' });
  state.clusters.set(c.id, c);
});

function sell(): string {
  const id = newId('ord_');
  const r = state.place(
    newOrderRow({
      id,
      side: 'sell',
      account_id: 'acc_provider',
      organization_id: 'org_provider',
      order_type: 'limit',
      gpu_type: 'h100',
      zone: 'us-west-1',
      gpu_count: 8,
      duration_hours: 24,
      limit_price_cents: 200,
      allow_partial: false,
      start_ms: T0,
      flexible_window_hours: null,
      expires_input_ms: null,
      cluster_id: 'cls_a',
      resale_lease_id: null,
      transfer_immediately: null,
      created_ms: T0,
    }),
    T0,
    new ChangeSet(),
  );
  if (!r.ok) throw new Error(r.message);
  return id;
}

function cordon(cordoned: boolean, by: CordonedBy, now = T0 + 1000) {
  const changes = new ChangeSet();
  const c = setCordon(state, 'cls_a', cordoned, by, now, changes);
  return { ...c, rows: changes.cordons };
}

describe('setCordon', () => {
  it('a provider’s cordon withdraws the sells and is lifted by the provider', () => {
    const id = sell();
    const on = cordon(true, 'provider');
    expect(on).toMatchObject({ changed: true, refused: false, afterBy: 'provider' });
    expect(on.cancelledOrderIds).toEqual([id]);
    expect(on.rows).toEqual([
      { id: 'cls_a', cordoned_at: new Date(T0 + 1000).toISOString(), cordoned_by: 'provider' },
    ]);
    expect(cordon(true, 'provider')).toMatchObject({ changed: false, rows: [] });
    const off = cordon(false, 'provider');
    expect(off).toMatchObject({ changed: true, afterMs: null, afterBy: null });
    expect(off.rows).toEqual([{ id: 'cls_a', cordoned_at: null, cordoned_by: null }]);
  });

  it('the provider cannot lift an operator’s cordon, nor take it over', () => {
    cordon(true, 'operator');
    expect(cordon(false, 'provider')).toMatchObject({ changed: false, refused: true, rows: [] });
    expect(cordon(true, 'provider')).toMatchObject({ changed: false, afterBy: 'operator' });
    expect(state.clusters.get('cls_a')?.cordonedBy).toBe('operator');
    expect(cordon(false, 'operator')).toMatchObject({ changed: true, afterBy: null });
  });

  it('an operator takes a provider’s cordon over, keeping when it began', () => {
    cordon(true, 'provider', T0 + 1000);
    const taken = cordon(true, 'operator', T0 + 5000);
    expect(taken).toMatchObject({
      changed: true,
      beforeBy: 'provider',
      afterBy: 'operator',
      afterMs: T0 + 1000,
      cancelledOrderIds: [],
    });
    expect(cordon(false, 'provider').refused).toBe(true);
  });
});
