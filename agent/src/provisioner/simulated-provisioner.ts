// The simulated provisioner: the cluster's nodes are the ones registered
// through the admin API (D31, from Attach), all on this host; a lease's
// workspace is a directory under the state directory with one subdirectory
// per leased node (the SSH sessions' HOME), its lease record and its
// kubeconfig. For demos and tests: the sessions run as the agent's own user.
//
//   <stateDir>/workspaces/<lease_id>/lease.json       the lease, state, token
//   <stateDir>/workspaces/<lease_id>/kubeconfig.yaml
//   <stateDir>/workspaces/<lease_id>/<ssh_user>/      one per node

import { randomBytes } from 'node:crypto';
import { mkdir, readdir, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

import type { NodeHealth } from '@gpux/proto';
import { isId } from '@gpux/shared';

import type { GpuInventory } from '../inventory/nvidia-smi.js';
import type { Logger } from '../logger.js';
import { hasErrno } from '../ssh/errno.js';
import { UnreadableRecordError, readJsonFile, writeFileAtomic } from '../state/atomic-file.js';
import { buildKubeconfig } from './kubeconfig.js';
import { isLeaseSpec } from './lease-spec.js';
import type { LeaseSpec } from './lease-spec.js';
import { ProvisionError, checkLeaseNodes, nodeAccessOf } from './provisioner.js';
import type { LeaseAccess, ProvisionResult, Provisioner, Workspace } from './provisioner.js';

export interface SimulatedProvisionerOptions {
  readonly stateDir: string;
  readonly clusterId: string;
  /** Where an unreadable workspace record is told. */
  readonly logger: Logger;
  /** The host's GPUs; every simulated node runs on this host and reports them. */
  readonly inventory: () => Promise<GpuInventory>;
  /** GPUX_SIMULATED_PROVISION_DELAY_MS: tests interrupt a provisioning in this window. */
  readonly provisionDelayMs?: number;
}

/** Nothing answers there: a simulated lease has no API server (D28's shape only). */
export const PLACEHOLDER_SERVER = 'https://simulated.gpux.invalid:6443';
const PLACEHOLDER_CA_PEM =
  '-----BEGIN CERTIFICATE-----\nplaceholder of the simulated provisioner\n-----END CERTIFICATE-----\n';

interface LeaseRecord {
  readonly state: 'provisioning' | 'ready';
  readonly lease: LeaseSpec;
  /** The kubeconfig's token, made once, so provisioning again gives the same access. */
  readonly token: string;
}

export class SimulatedProvisioner implements Provisioner {
  readonly kind = 'simulated' as const;
  private clusterNodes: ReadonlySet<string> | undefined;
  private readonly root: string;

  constructor(private readonly o: SimulatedProvisionerOptions) {
    this.root = join(o.stateDir, 'workspaces');
  }

  setClusterNodes(hostnames: readonly string[]): void {
    this.clusterNodes = new Set(hostnames);
  }

  async provision(lease: LeaseSpec, signal?: AbortSignal): Promise<ProvisionResult> {
    this.check(lease);
    const dir = this.dirOf(lease.leaseId);
    const existing = await this.readRecordOrLog(lease.leaseId, 'it is written again');
    if (existing?.state === 'ready') return { access: this.accessOf(existing), changed: false };

    const record: LeaseRecord = {
      state: 'provisioning',
      lease,
      token: existing?.token ?? randomBytes(32).toString('base64url'),
    };
    await mkdir(dir, { recursive: true, mode: 0o700 });
    await writeFileAtomic(join(dir, 'lease.json'), JSON.stringify(record));
    for (const node of lease.nodes) {
      await mkdir(join(dir, node.sshUser), { recursive: true, mode: 0o700 });
    }
    if ((this.o.provisionDelayMs ?? 0) > 0) {
      await sleep(this.o.provisionDelayMs, undefined, signal === undefined ? {} : { signal });
    }
    signal?.throwIfAborted();
    await writeFileAtomic(join(dir, 'kubeconfig.yaml'), this.kubeconfig(record));
    const ready: LeaseRecord = { ...record, state: 'ready' };
    await writeFileAtomic(join(dir, 'lease.json'), JSON.stringify(ready));
    return { access: this.accessOf(ready), changed: true };
  }

  async revoke(leaseId: string): Promise<void> {
    // The workspace, moved aside first, so list() never sees half of it (the
    // agent has ended the sessions' processes before).
    const gone = join(this.root, `.revoked-${leaseId}-${randomBytes(4).toString('hex')}`);
    try {
      await rename(this.dirOf(leaseId), gone);
    } catch (err) {
      if (!hasErrno(err, 'ENOENT')) throw err;
    }
    await this.sweep();
  }

  async list(): Promise<Workspace[]> {
    let names: string[];
    try {
      names = await readdir(this.root);
    } catch (err) {
      if (hasErrno(err, 'ENOENT')) return [];
      throw err;
    }
    const out: Workspace[] = [];
    for (const leaseId of names.filter((n) => isId('lse_', n))) {
      // Unreadable: half-made, revoked or provisioned again as reconciliation decides.
      const record = await this.readRecordOrLog(leaseId, 'listed as unfinished');
      out.push({
        leaseId,
        lease: record?.lease,
        access: record?.state === 'ready' ? this.accessOf(record) : undefined,
      });
    }
    return out;
  }

  async health(): Promise<NodeHealth[]> {
    const inventory = await this.o.inventory();
    const problem = inventory.kind === 'failed' ? inventory.problem : '';
    const gpus = inventory.kind === 'ok' ? [...inventory.gpus] : [];
    return [...(this.clusterNodes ?? [])].map((hostname) => ({
      hostname,
      healthy: problem === '',
      problem,
      gpus,
    }));
  }

  /** Workspaces moved aside by a revoke that did not finish (a crash) are removed too. */
  private async sweep(): Promise<void> {
    let names: string[];
    try {
      names = await readdir(this.root);
    } catch (err) {
      if (hasErrno(err, 'ENOENT')) return;
      throw err;
    }
    await Promise.all(
      names
        .filter((n) => n.startsWith('.revoked-'))
        .map((n) => rm(join(this.root, n), { recursive: true, force: true })),
    );
  }

  private check(lease: LeaseSpec): void {
    // The id names a directory: nothing else than an id may get there.
    if (!isId('lse_', lease.leaseId)) {
      throw new ProvisionError(`${JSON.stringify(lease.leaseId)} is not a lease id`, true);
    }
    checkLeaseNodes(lease, this.clusterNodes);
  }

  private dirOf(leaseId: string): string {
    return join(this.root, leaseId);
  }

  /** The record, or undefined when there is none or it is unreadable (logged, with what follows). */
  private async readRecordOrLog(leaseId: string, then: string): Promise<LeaseRecord | undefined> {
    try {
      return await this.readRecord(leaseId);
    } catch (err) {
      if (!(err instanceof UnreadableRecordError || err instanceof SyntaxError)) throw err;
      this.o.logger.warn({ leaseId, err }, `simulated workspace record unreadable; ${then}`);
      return undefined;
    }
  }

  private async readRecord(leaseId: string): Promise<LeaseRecord | undefined> {
    const raw = (await readJsonFile(join(this.dirOf(leaseId), 'lease.json'))) as
      LeaseRecord | undefined;
    if (raw === undefined) return undefined;
    if (
      (raw.state !== 'provisioning' && raw.state !== 'ready') ||
      typeof raw.token !== 'string' ||
      !isLeaseSpec(raw.lease, leaseId)
    ) {
      throw new UnreadableRecordError(`the lease record of ${leaseId} is not one`);
    }
    return raw;
  }

  private kubeconfig(record: LeaseRecord): string {
    return buildKubeconfig({
      clusterName: `gpux-${this.o.clusterId.replace(/_/g, '-')}`,
      server: PLACEHOLDER_SERVER,
      caPem: PLACEHOLDER_CA_PEM,
      namespace: record.lease.namespace,
      userName: record.lease.leaseUser,
      token: record.token,
      comment: [
        `Lease ${record.lease.leaseId}, namespace ${record.lease.namespace}.`,
        'Simulated provisioner: the server and its CA below are placeholders until the',
        'Kubernetes provisioner; nothing answers there and the token opens nothing.',
      ],
    });
  }

  private accessOf(record: LeaseRecord): LeaseAccess {
    const { lease } = record;
    const dir = this.dirOf(lease.leaseId);
    return {
      leaseId: lease.leaseId,
      nodes: nodeAccessOf(lease, (n) => ({
        kind: 'directory',
        dir: join(dir, n.sshUser),
        // The sessions' whole environment: never the agent's own, which holds its token.
        env: {
          PATH: process.env['PATH'] ?? '/usr/local/bin:/usr/bin:/bin',
          LANG: 'C.UTF-8',
          SHELL: '/bin/bash',
          USER: n.sshUser,
          LOGNAME: n.sshUser,
          KUBECONFIG: join(dir, 'kubeconfig.yaml'),
          GPUX_LEASE_ID: lease.leaseId,
          GPUX_NAMESPACE: lease.namespace,
          GPUX_NODE: n.hostname,
        },
      })),
      kubeconfig: this.kubeconfig(record),
    };
  }
}
