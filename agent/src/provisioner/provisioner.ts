// Provisioners behind one interface (docs/architecture.md: kubernetes |
// simulated; Akash's cluster client). Everything around them (events,
// reports, SSH, revocation, reconciliation) is the agent's and is shared.
// Every operation can run twice with the same result (D30): names come from
// the lease id, and a second provision of a provisioned lease changes nothing.

import type { NodeHealth } from '@gpux/proto';

import type { ProvisionerKind } from '../config.js';
import type { KubeClient } from './kubernetes/kube-client.js';
import type { LeaseSpec } from './lease-spec.js';

/** The workspace pod of one leased node, reached through the agent's Kubernetes client. */
export interface PodTarget {
  readonly kind: 'pod';
  readonly kube: KubeClient;
  readonly leaseId: string;
  readonly namespace: string;
  /** 1-based: the pod of Deployment workspace-<k>. */
  readonly nodeIndex: number;
  readonly hostname: string;
}

/** A workspace directory on this host, where sessions run as the agent's user (simulated). */
export interface DirectoryTarget {
  readonly kind: 'directory';
  readonly dir: string;
  /** The whole environment of the sessions' processes: never the agent's own. */
  readonly env: Readonly<Record<string, string>>;
}

/**
 * What a leased node's SSH sessions exec into. The provisioner says where;
 * the SSH side (sessions.ts) makes the session backend that goes there.
 */
export type WorkspaceTarget = PodTarget | DirectoryTarget;

/** One leased node as the SSH gateway serves it. */
export interface NodeAccess {
  readonly hostname: string;
  readonly sshUser: string;
  /** 1-based, the k of sshUserOf. */
  readonly nodeIndex: number;
  readonly workspace: WorkspaceTarget;
}

/** The lease's nodes as NodeAccess, the k-th (1-based) node's sessions running where `workspaceOf` says. */
export function nodeAccessOf(
  lease: LeaseSpec,
  workspaceOf: (node: LeaseSpec['nodes'][number], k: number) => WorkspaceTarget,
): NodeAccess[] {
  return lease.nodes.map((n, i) => ({
    hostname: n.hostname,
    sshUser: n.sshUser,
    nodeIndex: i + 1,
    workspace: workspaceOf(n, i + 1),
  }));
}

export interface LeaseAccess {
  readonly leaseId: string;
  readonly nodes: readonly NodeAccess[];
  /** D28: YAML, bound to the lease's namespace. */
  readonly kubeconfig: string;
  /**
   * When this access last changed (agent clock), for an access that changes
   * on its own: a kubeconfig whose token is refreshed before the lease ends
   * (D28). A report the exchange answered before this did not carry it.
   * Undefined: it never changes once provisioned.
   */
  readonly madeMs?: number | undefined;
  /**
   * When it must be made again (agent clock): its token expires before the
   * lease ends (D28). The agent's work queue provisions the lease again
   * then, which refreshes the token, and reports the new kubeconfig.
   * Undefined: it lasts as long as the lease.
   */
  readonly refreshAtMs?: number | undefined;
}

/** What exists on the provider's side for one lease. */
export interface Workspace {
  readonly leaseId: string;
  /** The lease as it was provisioned; undefined when that record is missing or unreadable. */
  readonly lease: LeaseSpec | undefined;
  /** Set when provisioning finished; undefined for a workspace left half-made (a crash). */
  readonly access: LeaseAccess | undefined;
}

export interface ProvisionResult {
  readonly access: LeaseAccess;
  /** false: everything was there already, the access is the one made before. */
  readonly changed: boolean;
}

export class ProvisionError extends Error {
  override readonly name = 'ProvisionError';
  constructor(
    message: string,
    /** true: trying again cannot help (ReportFailed); false: try again later. */
    readonly permanent: boolean,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

const SSH_USER = /^[a-z0-9][a-z0-9-]{0,63}$/;

/**
 * What every provisioner checks of a lease's nodes before it makes anything:
 * at least one, each with an SSH user name, each a node of this cluster (D31)
 * once the cluster's nodes are known. A failure is permanent (ReportFailed).
 */
export function checkLeaseNodes(
  lease: LeaseSpec,
  clusterNodes: ReadonlySet<string> | undefined,
): void {
  if (lease.nodes.length === 0) throw new ProvisionError('the lease names no node', true);
  for (const node of lease.nodes) {
    if (!SSH_USER.test(node.sshUser)) {
      throw new ProvisionError(`"${node.sshUser}" is not an SSH user name`, true);
    }
    if (clusterNodes !== undefined && !clusterNodes.has(node.hostname)) {
      throw new ProvisionError(`node ${node.hostname} is not a node of this cluster`, true);
    }
  }
}

export interface Provisioner {
  readonly kind: ProvisionerKind;
  /** The cluster's registered nodes, from Attach and every heartbeat answer (D31). */
  setClusterNodes(hostnames: readonly string[]): void;
  /**
   * Makes the lease's access exist and returns it; for a lease already
   * provisioned, returns the same access and changes nothing. An aborted
   * signal stops it early (a revoke overtook it); what it left is removed by
   * `revoke`.
   */
  provision(lease: LeaseSpec, signal?: AbortSignal): Promise<ProvisionResult>;
  /**
   * Removes every access of the lease ("pods at once, the rest within 60 s",
   * D26); the agent has ended its SSH sessions and what they left running
   * before. Nothing there: done.
   */
  revoke(leaseId: string): Promise<void>;
  /** Every lease workspace that exists, finished or not. */
  list(): Promise<Workspace[]>;
  /** The health of every node this agent speaks for, for the heartbeat. */
  health(): Promise<NodeHealth[]>;
}
