import { describe, expect, it } from 'vitest';

import { InvariantError } from '@gpux/shared';

import { eventBody } from './outbox-relay.js';

describe('the event the relay publishes (D32)', () => {
  const provision = {
    kind: 'lease.provision',
    event_id: 'evt_1',
    lease_id: 'lse_1',
    nodes: [{ hostname: 'gpu-1', ssh_user: 'u1' }],
    source_lease_id: null,
  };

  it('a provision event gets its key snapshot as ssh_public_keys, the rest as written', () => {
    const keys = ['ssh-ed25519 AAAA one', 'ssh-rsa AAAA "two"'];
    const body = eventBody(JSON.stringify(provision), JSON.stringify(keys));
    expect(JSON.parse(body)).toEqual({ ...provision, ssh_public_keys: keys });
    expect(JSON.parse(eventBody(JSON.stringify(provision), '[]'))).toEqual({
      ...provision,
      ssh_public_keys: [],
    });
  });

  it('any other event is published exactly as written', () => {
    const revoke = JSON.stringify({ kind: 'lease.revoke', event_id: 'evt_2', lease_id: 'lse_1' });
    expect(eventBody(revoke, null)).toBe(revoke);
  });

  it('a payload that is not a JSON object is a broken invariant, not a published event', () => {
    expect(() => eventBody('[]', '[]')).toThrow(InvariantError);
    expect(() => eventBody('{}', '[]')).toThrow(InvariantError);
  });
});
