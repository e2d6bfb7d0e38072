import { describe, expect, it } from 'vitest';

import { EventFormatError, parseLeaseEvent } from './parse-event.js';

const LEASE = 'lse_01jdq3m5x0aaaaaaaaaaaaaaaa';

const provision = {
  kind: 'lease.provision',
  event_id: 'evt_1',
  lease_id: LEASE,
  cluster_id: 'cls_1',
  account_id: 'acc_1',
  namespace: 'gpux-lse-1',
  lease_user: 'lse-1',
  nodes: [{ hostname: 'n1', ssh_user: 'lse-1-1' }],
  gpu_count: 8,
  start_ms: 1,
  end_ms: 3_600_001,
  source_lease_id: null,
  ssh_public_keys: ['ssh-ed25519 AAAA x'],
};

const revoke = {
  kind: 'lease.revoke',
  event_id: 'evt_2',
  lease_id: LEASE,
  cluster_id: 'cls_1',
  namespace: 'gpux-lse-1',
  nodes: ['n1'],
  reason: 'terminated',
  at_ms: 5,
};

describe('lease event payloads', () => {
  it('reads a provision and a revoke event', () => {
    expect(parseLeaseEvent(JSON.stringify(provision))).toEqual(provision);
    expect(parseLeaseEvent(JSON.stringify(revoke))).toEqual(revoke);
  });

  it('a provision stored before the relay added keys has none (D32)', () => {
    const { ssh_public_keys: _, ...old } = provision;
    expect(parseLeaseEvent(JSON.stringify(old)).kind === 'lease.provision').toBe(true);
  });

  it.each([
    ['not JSON', '{', /not JSON/],
    ['an array', '[]', /not a JSON object/],
    [
      'a lease id that could name a path',
      JSON.stringify({ ...provision, lease_id: '../x' }),
      /lease_id/,
    ],
    ['no nodes', JSON.stringify({ ...provision, nodes: [] }), /nodes/],
    ['an unknown kind', JSON.stringify({ ...revoke, kind: 'lease.move' }), /unknown kind/],
    ['an unknown reason', JSON.stringify({ ...revoke, reason: 'bored' }), /reason/],
    ['a fractional time', JSON.stringify({ ...provision, end_ms: 1.5 }), /end_ms/],
  ])('refuses %s', (_what, data, message) => {
    expect(() => parseLeaseEvent(data)).toThrow(EventFormatError);
    expect(() => parseLeaseEvent(data)).toThrow(message);
  });
});
