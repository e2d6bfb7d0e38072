// The SSH side of the leases: one session backend per leased node, made
// from where the provisioner says its sessions run (WorkspaceTarget), kept
// so that revocation can end what the node's sessions left running.
//
//   directory  LocalWorkspaceBackend: processes of the agent's user on this host
//   pod        PodExecBackend: exec and port-forward into the workspace pod

import type { Logger } from './logger.js';
import { PodExecBackend } from './provisioner/kubernetes/pod-exec-backend.js';
import type { NodeAccess, WorkspaceTarget } from './provisioner/provisioner.js';
import { LocalWorkspaceBackend } from './ssh/local-workspace-backend.js';
import type { SessionBackend } from './ssh/types.js';

/** The session backend that runs sessions where `target` says. */
export function sessionBackendOf(target: WorkspaceTarget, logger: Logger): SessionBackend {
  switch (target.kind) {
    case 'directory':
      return new LocalWorkspaceBackend(target.dir, target.env, { logger });
    case 'pod':
      return new PodExecBackend(target);
  }
}

export class SessionBackends {
  /** lease id → node index → its backend. */
  private readonly byLease = new Map<string, Map<number, SessionBackend>>();

  constructor(private readonly make: (target: WorkspaceTarget) => SessionBackend) {}

  /** The backend of one node of a ready lease, made at its first session. */
  of(leaseId: string, node: NodeAccess): SessionBackend {
    let nodes = this.byLease.get(leaseId);
    if (nodes === undefined) {
      nodes = new Map();
      this.byLease.set(leaseId, nodes);
    }
    let backend = nodes.get(node.nodeIndex);
    if (backend === undefined) {
      backend = this.make(node.workspace);
      nodes.set(node.nodeIndex, backend);
    }
    return backend;
  }

  /**
   * Revocation: ends what the lease's sessions left running and forgets its
   * backends; one that could not end everything is kept for the next try
   * and its error thrown.
   */
  async terminate(leaseId: string): Promise<void> {
    const nodes = this.byLease.get(leaseId);
    if (nodes === undefined) return;
    const ended = await Promise.allSettled(
      [...nodes].map(async ([k, b]) => {
        await b.terminate();
        nodes.delete(k);
      }),
    );
    if (nodes.size === 0) this.byLease.delete(leaseId);
    const failed = ended.find((r) => r.status === 'rejected');
    if (failed !== undefined) throw failed.reason;
  }
}
