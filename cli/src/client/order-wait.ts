// `gpux buy --wait`: follows the order and every lease of its fill (one buy
// can fill from several sellers, each fill a lease) until each lease is
// active and each of its SSH endpoints answers the SSH handshake, not only
// until the API says active. A resting order is followed up to the
// deadline and then left as it is; so is one interrupted with Ctrl-C.

import type { Schemas } from './api.js';
import { sshBanner } from './ssh-endpoint.js';
import type { SshEndpoint } from './ssh-endpoint.js';

type Order = Schemas['Order'];
type Lease = Schemas['LeaseDetail'];

export interface WaitDeps {
  readOrder(id: string): Promise<Order>;
  readLease(id: string): Promise<Lease>;
  /** Whether the SSH server at the endpoint answers the handshake. */
  answers(e: SshEndpoint): Promise<boolean>;
  /** One line of progress (stderr). */
  progress(line: string): void;
  /** Waits `ms`, or less when `signal` aborts. */
  sleep(ms: number, signal: AbortSignal): Promise<void>;
  now(): number;
}

export interface Waited {
  /** ready: every lease of the fill answers SSH; timeout: the deadline came; interrupted: Ctrl-C. */
  readonly outcome: 'ready' | 'timeout' | 'interrupted';
  /** The order as last read. */
  readonly order: Order;
  /** The leases of its fills as last read. */
  readonly leases: readonly Lease[];
  /** The leases that answer SSH. */
  readonly ready: ReadonlySet<string>;
}

/** The order no longer waits for fills: filled, or cancelled (with whatever filled before). */
export function closed(o: Order): boolean {
  return o.status === 'filled' || o.status === 'cancelled';
}

/** The lease ids of the order's fills, in fill order, each once. */
export function leaseIds(o: Order): string[] {
  return [...new Set((o.matches ?? []).map((m) => m.lease_id))];
}

/** A lease that can never become ready. */
export function ended(l: Lease): boolean {
  return l.status === 'failed' || l.status === 'terminated' || l.status === 'expired';
}

/** Where each SSH endpoint of the lease listens. */
export function endpointsOf(l: Lease): SshEndpoint[] {
  return l.ssh_access.map((a) => ({ host: a.host, port: a.port }));
}

/** The real SSH probe: a banner within 3 s. */
export async function answersSsh(e: SshEndpoint): Promise<boolean> {
  return (await sshBanner(e)) !== undefined;
}

/** Follows `orderId` until every lease answers SSH, `deadline` passes or `signal` aborts. */
export async function waitForOrder(
  orderId: string,
  deadline: number,
  signal: AbortSignal,
  deps: WaitDeps,
  pollMs = 1_000,
): Promise<Waited> {
  const said = new Map<string, string>();
  const say = (key: string, line: string): void => {
    if (said.get(key) === line) return;
    said.set(key, line);
    deps.progress(line);
  };
  const leases = new Map<string, Lease>();
  const ready = new Set<string>();
  let order = await deps.readOrder(orderId);
  for (;;) {
    say(
      'order',
      `order ${order.order_id}: ${order.status}, ${order.filled_gpus} of ${order.gpu_count} GPUs filled`,
    );
    for (const id of leaseIds(order)) {
      if (ready.has(id)) continue;
      const lease = await deps.readLease(id);
      leases.set(id, lease);
      if (ended(lease)) {
        say(id, `lease ${id}: ${lease.status}${lease.end_reason ? ` (${lease.end_reason})` : ''}`);
        continue;
      }
      const endpoints = endpointsOf(lease);
      if (lease.status !== 'active' || endpoints.length === 0) {
        say(id, `lease ${id}: ${lease.state}, waiting for its SSH endpoints`);
        continue;
      }
      const answering = await Promise.all(endpoints.map((e) => deps.answers(e)));
      if (answering.every(Boolean)) {
        ready.add(id);
        say(
          id,
          `lease ${id}: active; SSH answers at ${lease.ssh_access.map((a) => a.endpoint).join(', ')}`,
        );
      } else {
        say(id, `lease ${id}: active, waiting for SSH to answer`);
      }
    }
    const all = leaseIds(order);
    const settled = all.every((id) => ready.has(id) || ended(leases.get(id) as Lease));
    const result = (outcome: Waited['outcome']): Waited => ({
      outcome,
      order,
      leases: all.map((id) => leases.get(id)).filter((l) => l !== undefined),
      ready,
    });
    if (closed(order) && settled) return result('ready');
    if (signal.aborted) return result('interrupted');
    if (deps.now() >= deadline) return result('timeout');
    await deps.sleep(Math.min(pollMs, Math.max(0, deadline - deps.now())), signal);
    if (signal.aborted) return result('interrupted');
    if (!closed(order)) order = await deps.readOrder(orderId);
  }
}
