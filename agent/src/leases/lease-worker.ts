// Provisioning and revocation of one lease, whoever asks: an event, its
// redelivery, the reconciler, a token due for refresh (D30). Called by the
// lease queue (lease-queue.ts), which runs one piece of work per lease at a
// time; every step may run twice with the same result; a revoked lease is
// never provisioned again, whatever order the events arrive in.
//
//   provision: tombstone? → provisioner.provision → ReportProvisioned (once) → mark
//   revoke:    tombstone → gateway.revoke (sessions at once) → the sessions'
//              leftovers → provisioner.revoke → ReportRevoked → mark

import type { ExchangeApi } from '../exchange/exchange-client.js';
import { isRepeatedRefusal, isTransient } from '../exchange/exchange-client.js';
import type { LeaseDirectory } from '../lease-directory.js';
import type { Logger } from '../logger.js';
import type { LeaseSpec } from '../provisioner/lease-spec.js';
import { ProvisionError } from '../provisioner/provisioner.js';
import type { LeaseAccess, Provisioner } from '../provisioner/provisioner.js';
import type { SshGatewayPort } from '../ssh-port.js';
import type { ReportMarks } from '../state/report-marks.js';
import { tombstoneUntil } from '../state/tombstones.js';
import type { Tombstones } from '../state/tombstones.js';

export type ProvisionOutcome =
  /** Made now and reported. */
  | 'provisioned'
  /** There already; reported (again) because the exchange may not have it. */
  | 'reported'
  /** There already and reported before: nothing to do. */
  | 'unchanged'
  /** Revoked before or while it was provisioned: it stays revoked. */
  | 'revoked'
  /** Its end has passed: the exchange ends it, nothing to make. */
  | 'ended'
  /** It cannot be provisioned here: ReportFailed sent. */
  | 'failed';

export interface Provisioned {
  readonly outcome: ProvisionOutcome;
  /** When the lease's access must be made again (a token that ends before the lease, D28). */
  readonly refreshAtMs?: number | undefined;
}

/** Why a lease is revoked: its reason, when, and its end if known (how long to remember it). */
export interface RevokeWhy {
  readonly reason: string;
  readonly atMs: number;
  readonly endMs?: number | undefined;
}

/** The SSH side's session backends: what revocation ends after the sessions (sessions.ts). */
export interface SessionLeftovers {
  terminate(leaseId: string): Promise<void>;
}

export interface LeaseWorkerOptions {
  readonly clusterId: string;
  readonly exchange: ExchangeApi;
  readonly provisioner: Provisioner;
  readonly gateway: SshGatewayPort;
  readonly sessions: SessionLeftovers;
  readonly directory: LeaseDirectory;
  readonly tombstones: Tombstones;
  readonly reports: ReportMarks;
  /** GPUX_SSH_ADVERTISE_HOST */
  readonly advertiseHost: string;
  readonly logger: Logger;
  /** A lease's nodes are free again (the seller lists them). */
  readonly onLeaseEnded?: () => void;
  readonly now?: () => number;
  /** How long provisioning and revocation took here, in seconds (metrics.ts). */
  readonly observe?: {
    provisioned(seconds: number): void;
    revoked(seconds: number): void;
  };
}

export class LeaseWorker {
  /** Provisionings under way, so a revocation can stop them. */
  private readonly inFlight = new Map<string, AbortController>();
  private readonly now: () => number;

  constructor(private readonly o: LeaseWorkerOptions) {
    this.now = o.now ?? Date.now;
  }

  /**
   * Makes the lease's access and reports it. A transient failure (exchange
   * unreachable, provisioner busy) throws: the queue tries again later.
   * `force`: report even if reported before (the reconciler saw the
   * exchange lose it). `signal`: the agent is stopping (throws, unfinished).
   */
  async provision(
    lease: LeaseSpec,
    options: { readonly force?: boolean; readonly signal?: AbortSignal } = {},
  ): Promise<Provisioned> {
    const id = lease.leaseId;
    if (this.o.tombstones.has(id)) {
      // Its end is known now: remember it only that long.
      await this.o.tombstones.add(id, lease.endMs, 'revoked');
      return { outcome: 'revoked' };
    }
    if (lease.endMs <= this.now()) return { outcome: 'ended' };
    const revoked = new AbortController();
    this.inFlight.set(id, revoked);
    const signal =
      options.signal === undefined
        ? revoked.signal
        : AbortSignal.any([revoked.signal, options.signal]);
    try {
      let access: LeaseAccess;
      let changed: boolean;
      try {
        this.o.directory.starting(lease);
        const t0 = performance.now();
        ({ access, changed } = await this.o.provisioner.provision(lease, signal));
        if (changed) this.o.observe?.provisioned((performance.now() - t0) / 1000);
      } catch (err) {
        if (revoked.signal.aborted) {
          // Stopped by its revocation (D30): what it left is the revocation's to remove.
          this.o.logger.debug({ leaseId: id, err }, 'provisioning stopped: the lease is revoked');
          return { outcome: 'revoked' };
        }
        if (err instanceof ProvisionError && err.permanent) {
          return { outcome: await this.fail(lease, err) };
        }
        this.o.directory.forget(id);
        throw err;
      }
      if (revoked.signal.aborted || this.o.tombstones.has(id)) return { outcome: 'revoked' };
      this.o.directory.ready(lease, access);
      const refreshAtMs = access.refreshAtMs;
      // Report once (issue 12): what the exchange answered for is not sent
      // again unless something changed or the reconciler saw it lost. An
      // access that changed on its own after the last report (a token
      // refreshed, D28, its report cut off by a restart) was not answered for.
      const mark = this.o.reports.get(id);
      const answered =
        mark !== undefined && (access.madeMs === undefined || mark.atMs >= access.madeMs);
      if (!changed && options.force !== true && answered) {
        return { outcome: 'unchanged', refreshAtMs };
      }
      await this.report(lease, access);
      return { outcome: changed ? 'provisioned' : 'reported', refreshAtMs };
    } finally {
      if (this.inFlight.get(id) === revoked) this.inFlight.delete(id);
    }
  }

  /**
   * A revocation is on its way (queued behind work on the lease): stops a
   * provisioning under way and refuses the lease's new SSH sessions at once
   * (D26), before the queue gets to `revoke`.
   */
  preempt(leaseId: string): void {
    this.inFlight.get(leaseId)?.abort();
    this.o.directory.ended(leaseId);
  }

  /**
   * Ends every access of the lease and reports it. `why.endMs`: the lease's
   * end if known (how long to remember it was revoked); `why.atMs`: when it
   * was revoked. Transient failures throw; running it again is harmless.
   */
  async revoke(leaseId: string, why: RevokeWhy): Promise<void> {
    // First of all: from here on nothing provisions it again (D30).
    const t0 = performance.now();
    await this.o.tombstones.add(leaseId, tombstoneUntil(why.endMs, why.atMs), why.reason);
    this.preempt(leaseId);
    const closed = await this.o.gateway.revoke(leaseId, `gpux: lease ${leaseId} ${why.reason}`);
    // What the sessions left running, at once; then the rest of the workspace.
    await this.o.sessions.terminate(leaseId);
    await this.o.provisioner.revoke(leaseId);
    this.o.directory.forget(leaseId);
    this.o.observe?.revoked((performance.now() - t0) / 1000);
    // Delivered again after it was reported: the steps above were enough.
    if (this.o.tombstones.get(leaseId)?.reported !== true) {
      try {
        const res = await this.o.exchange.reportRevoked(this.o.clusterId, leaseId);
        this.o.logger.info(
          { leaseId, reason: why.reason, sessionsClosed: closed, leaseStatus: res.leaseStatus },
          'lease revoked',
        );
      } catch (err) {
        if (isTransient(err)) throw err;
        // Refused for good (not our lease, bad token): nothing a retry changes.
        if (!isRepeatedRefusal(err)) {
          this.o.logger.error({ leaseId, err }, 'ReportRevoked refused; the access is gone anyway');
        }
      }
      await this.o.tombstones.markReported(leaseId);
      await this.o.reports.delete(leaseId);
    }
    this.o.onLeaseEnded?.();
  }

  /** Marks a lease reported without sending anything (the exchange shows it active). */
  async markReported(leaseId: string): Promise<void> {
    await this.o.reports.set(leaseId, this.now());
  }

  private async report(lease: LeaseSpec, access: LeaseAccess): Promise<void> {
    const { port } = this.o.gateway.address();
    const host = this.o.advertiseHost.includes(':')
      ? `[${this.o.advertiseHost}]`
      : this.o.advertiseHost;
    const hostKey = this.o.gateway.hostKey?.publicKey;
    try {
      const res = await this.o.exchange.reportProvisioned({
        clusterId: this.o.clusterId,
        leaseId: lease.leaseId,
        sshEndpoints: access.nodes.map((n) => ({
          hostname: n.hostname,
          endpoint: `${n.sshUser}@${host}:${port}`,
        })),
        sshHostKeys: hostKey === undefined ? [] : [hostKey],
        kubeconfig: access.kubeconfig,
      });
      this.o.logger.info(
        { leaseId: lease.leaseId, leaseStatus: res.leaseStatus },
        'lease provisioned and reported',
      );
    } catch (err) {
      if (isTransient(err)) throw err;
      // The exchange will not take it (e.g. not its lease): the reconciler
      // removes the workspace once the lease is not listed. Asked again by
      // the reconciler, the same report is answered from the refusal's
      // memory (paced-exchange.ts), not sent, and not logged again.
      if (!isRepeatedRefusal(err)) {
        this.o.logger.error({ leaseId: lease.leaseId, err }, 'ReportProvisioned refused');
      }
      return;
    }
    await this.o.reports.set(lease.leaseId, this.now());
  }

  /** D25: the lease fails at once with a full refund; nothing of it stays here. */
  private async fail(lease: LeaseSpec, err: ProvisionError): Promise<ProvisionOutcome> {
    const id = lease.leaseId;
    this.o.logger.error({ leaseId: id, err }, 'lease cannot be provisioned');
    this.o.directory.forget(id);
    await this.o.provisioner.revoke(id);
    try {
      await this.o.exchange.reportFailed(this.o.clusterId, id, err.message);
    } catch (reportErr) {
      // Tried again from the start (the event is delivered again), so the
      // tombstone below must wait for the report.
      if (isTransient(reportErr)) throw reportErr;
      if (!isRepeatedRefusal(reportErr)) {
        this.o.logger.error({ leaseId: id, err: reportErr }, 'ReportFailed refused');
      }
    }
    await this.o.tombstones.add(id, lease.endMs, 'failed');
    return 'failed';
  }
}
