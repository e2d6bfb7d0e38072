import { describe, expect, it } from 'vitest';

import { LeaseDirectory } from './lease-directory.js';
import type { LeaseSpec } from './provisioner/lease-spec.js';
import type { LeaseAccess } from './provisioner/provisioner.js';

const NOW = 1_000_000;
const lease: LeaseSpec = {
  leaseId: 'lse_a',
  namespace: 'gpux-lse-a',
  leaseUser: 'lse-a',
  nodes: [
    { hostname: 'n1', sshUser: 'lse-a-1' },
    { hostname: 'n2', sshUser: 'lse-a-2' },
  ],
  gpuCount: 16,
  startMs: NOW - 1,
  endMs: NOW + 1_000,
  sshPublicKeys: ['ssh-ed25519 AAAA buyer'],
  sourceLeaseId: null,
};
const access: LeaseAccess<string> = {
  leaseId: 'lse_a',
  kubeconfig: 'kind: Config',
  nodes: [
    { hostname: 'n1', sshUser: 'lse-a-1', nodeIndex: 1, backend: 'backend-1' },
    { hostname: 'n2', sshUser: 'lse-a-2', nodeIndex: 2, backend: 'backend-2' },
  ],
};

describe('SSH endpoint directory (D32)', () => {
  it("maps each node's SSH user to its lease, node and the buyer's keys", () => {
    let now = NOW;
    const d = new LeaseDirectory<string>('idle', () => now);
    expect(d.lookup('lse-a-1')).toBeUndefined();

    d.starting(lease);
    expect(d.lookup('lse-a-2')).toMatchObject({
      leaseId: 'lse_a',
      nodeIndex: 2,
      state: 'starting',
      backend: 'idle',
    });

    d.ready(lease, access);
    expect(d.lookup('lse-a-2')).toEqual({
      leaseId: 'lse_a',
      nodeIndex: 2,
      authorizedKeys: ['ssh-ed25519 AAAA buyer'],
      state: 'ready',
      backend: 'backend-2',
    });
    // Provisioning again does not take a ready lease back to starting.
    d.starting(lease);
    expect(d.lookup('lse-a-1')?.state).toBe('ready');

    // A lost revocation still ends at the lease's end.
    now = lease.endMs;
    expect(d.lookup('lse-a-1')).toMatchObject({
      state: 'unavailable',
      message: 'gpux: lease lse_a has ended',
    });
  });

  it('a revoked lease is unavailable, then unknown once forgotten', () => {
    const d = new LeaseDirectory<string>('idle', () => NOW);
    d.ready(lease, access);
    d.ended('lse_a');
    expect(d.lookup('lse-a-1')?.state).toBe('unavailable');
    d.forget('lse_a');
    expect(d.lookup('lse-a-1')).toBeUndefined();
    expect(d.size).toBe(0);
  });
});
