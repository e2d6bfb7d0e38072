import { describe, expect, it } from 'vitest';

import { LeaseDirectory } from './lease-directory.js';
import type { LeaseSpec } from './provisioner/lease-spec.js';
import type { LeaseAccess, NodeAccess } from './provisioner/provisioner.js';
import type { SessionBackend } from './ssh/types.js';

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
const workspace = (dir: string) => ({ kind: 'directory' as const, dir, env: {} });
const access: LeaseAccess = {
  leaseId: 'lse_a',
  kubeconfig: 'kind: Config',
  nodes: [
    { hostname: 'n1', sshUser: 'lse-a-1', nodeIndex: 1, workspace: workspace('/w/1') },
    { hostname: 'n2', sshUser: 'lse-a-2', nodeIndex: 2, workspace: workspace('/w/2') },
  ],
};

/** Backends that are only their node's workspace directory, made once per node. */
function backends() {
  const made: string[] = [];
  return {
    made,
    of: (leaseId: string, node: NodeAccess): SessionBackend => {
      const dir = node.workspace.kind === 'directory' ? node.workspace.dir : '';
      made.push(`${leaseId} ${dir}`);
      return { sftpRoot: dir } as SessionBackend;
    },
  };
}

describe('SSH endpoint directory (D32)', () => {
  it("maps each node's SSH user to its lease, node and the buyer's keys", () => {
    let now = NOW;
    const d = new LeaseDirectory(backends(), () => now);
    expect(d.lookup('lse-a-1')).toBeUndefined();

    d.starting(lease);
    // No session runs on an endpoint that is not ready: it has no backend.
    expect(d.lookup('lse-a-2')).toEqual({
      leaseId: 'lse_a',
      nodeIndex: 2,
      authorizedKeys: ['ssh-ed25519 AAAA buyer'],
      state: 'starting',
      message: 'gpux: lease lse_a is being provisioned; try again in a few seconds',
    });

    d.ready(lease, access);
    expect(d.lookup('lse-a-2')).toEqual({
      leaseId: 'lse_a',
      nodeIndex: 2,
      authorizedKeys: ['ssh-ed25519 AAAA buyer'],
      state: 'ready',
      backend: { sftpRoot: '/w/2' },
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
    const d = new LeaseDirectory(backends(), () => NOW);
    d.ready(lease, access);
    d.ended('lse_a');
    expect(d.lookup('lse-a-1')?.state).toBe('unavailable');
    d.forget('lse_a');
    expect(d.lookup('lse-a-1')).toBeUndefined();
    expect(d.size).toBe(0);
  });

  it("knows the hostnames of the leases it holds, until they end (the seller's view)", () => {
    const d = new LeaseDirectory(backends(), () => NOW);
    d.starting(lease);
    expect(d.leasedHostnames()).toEqual(new Set(['n1', 'n2']));
    d.ended('lse_a');
    expect(d.leasedHostnames()).toEqual(new Set());
  });
});
