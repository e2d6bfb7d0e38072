// Who may log in where (the SSH gateway's EndpointDirectory): an SSH user
// `<lease_user>-<k>` stands for the k-th node of its lease, with exactly the
// keys the buyer had when the lease was filled (D32). The gateway asks at
// every login and every session request, so a change here reaches open
// connections too.

import type { LeaseSpec } from './provisioner/lease-spec.js';
import type { LeaseAccess } from './provisioner/provisioner.js';
import type { EndpointDirectory, EndpointState, SessionBackend, SshEndpoint } from './ssh/types.js';

interface Entry {
  readonly lease: LeaseSpec;
  readonly state: EndpointState;
  readonly access: LeaseAccess | undefined;
}

/** The session backends of ready nodes (sessions.ts). */
export interface BackendSource {
  of(leaseId: string, node: LeaseAccess['nodes'][number]): SessionBackend;
}

export class LeaseDirectory implements EndpointDirectory {
  private readonly leases = new Map<string, Entry>();
  private readonly users = new Map<string, { leaseId: string; nodeIndex: number }>();

  constructor(
    private readonly backends: BackendSource,
    private readonly now: () => number = Date.now,
  ) {}

  /** Provisioning has begun: logins succeed and are told to wait. A ready lease stays ready. */
  starting(lease: LeaseSpec): void {
    if (this.leases.get(lease.leaseId)?.state === 'ready') return;
    this.put({ lease, state: 'starting', access: undefined });
  }

  ready(lease: LeaseSpec, access: LeaseAccess): void {
    this.put({ lease, state: 'ready', access });
  }

  /** Revoked: kept as unavailable until forgotten, so a session asking now hears why. */
  ended(leaseId: string): void {
    const e = this.leases.get(leaseId);
    if (e !== undefined) this.put({ lease: e.lease, state: 'unavailable', access: undefined });
  }

  forget(leaseId: string): void {
    const e = this.leases.get(leaseId);
    if (e === undefined) return;
    this.leases.delete(leaseId);
    for (const n of e.lease.nodes) {
      if (this.users.get(n.sshUser)?.leaseId === leaseId) this.users.delete(n.sshUser);
    }
  }

  /** The lease as this agent knows it, provisioned or being provisioned. */
  leaseOf(leaseId: string): LeaseSpec | undefined {
    return this.leases.get(leaseId)?.lease;
  }

  get size(): number {
    return this.leases.size;
  }

  /** The nodes of the leases held here (provisioning or provisioned, not ended): the seller's view. */
  leasedHostnames(): Set<string> {
    const hosts = new Set<string>();
    const now = this.now();
    for (const e of this.leases.values()) {
      if (e.state === 'unavailable' || now >= e.lease.endMs) continue;
      for (const n of e.lease.nodes) hosts.add(n.hostname);
    }
    return hosts;
  }

  lookup(username: string): SshEndpoint | undefined {
    const user = this.users.get(username);
    const e = user === undefined ? undefined : this.leases.get(user.leaseId);
    if (user === undefined || e === undefined) return undefined;
    const base = {
      leaseId: user.leaseId,
      nodeIndex: user.nodeIndex,
      authorizedKeys: e.lease.sshPublicKeys,
    };
    // A lost revocation still ends at the lease's end (as D28's token expiry).
    if (e.state === 'unavailable' || this.now() >= e.lease.endMs) {
      return { ...base, state: 'unavailable', message: `gpux: lease ${user.leaseId} has ended` };
    }
    const node = e.access?.nodes.find((n) => n.nodeIndex === user.nodeIndex);
    if (e.state === 'starting' || node === undefined) {
      return {
        ...base,
        state: 'starting',
        message: `gpux: lease ${user.leaseId} is being provisioned; try again in a few seconds`,
      };
    }
    return { ...base, state: 'ready', backend: this.backends.of(user.leaseId, node) };
  }

  private put(e: Entry): void {
    this.leases.set(e.lease.leaseId, e);
    e.lease.nodes.forEach((n, i) =>
      this.users.set(n.sshUser, { leaseId: e.lease.leaseId, nodeIndex: i + 1 }),
    );
  }
}
