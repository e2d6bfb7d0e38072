// One lease event, start to ack (D29): acked only after the work is done,
// so a crash redelivers it; naked with a growing delay when the work could
// not be done now (the exchange unreachable); a payload that can never be
// handled is logged and acked, so it does not come back forever.

import type { LeaseWorker } from '../leases/lease-worker.js';
import type { Logger } from '../logger.js';
import { leaseSpecFromEvent } from '../provisioner/lease-spec.js';
import type { EventMessage } from './event-stream.js';
import { EventFormatError, parseLeaseEvent } from './parse-event.js';

export interface EventHandlerOptions<B> {
  readonly clusterId: string;
  readonly worker: LeaseWorker<B>;
  readonly logger: Logger;
  /** The lease's end, if known here (for how long its revocation is remembered). */
  readonly endOf: (leaseId: string) => number | undefined;
  /** How often a long piece of work tells the server it is still at it. */
  readonly workingEveryMs?: number;
}

/** 1 s, 2 s, 4 s … at most 30 s. */
export function redeliveryDelayMs(deliveryCount: number): number {
  return Math.min(30_000, 1_000 * 2 ** Math.max(0, Math.min(deliveryCount - 1, 5)));
}

export async function handleEvent<B>(m: EventMessage, o: EventHandlerOptions<B>): Promise<void> {
  const keepAlive = setInterval(() => m.working(), o.workingEveryMs ?? 10_000);
  try {
    let event;
    try {
      event = parseLeaseEvent(m.data);
    } catch (err) {
      if (!(err instanceof EventFormatError)) throw err;
      o.logger.error({ subject: m.subject, err }, 'unreadable lease event dropped');
      await m.ack();
      return;
    }
    const log = { leaseId: event.lease_id, eventId: event.event_id, delivery: m.deliveryCount };
    if (event.cluster_id !== o.clusterId) {
      o.logger.error({ ...log, clusterId: event.cluster_id }, 'event of another cluster dropped');
      await m.ack();
      return;
    }
    if (event.kind === 'lease.provision') {
      const outcome = await o.worker.provision(leaseSpecFromEvent(event));
      o.logger.info({ ...log, outcome }, 'lease.provision handled');
    } else {
      await o.worker.revoke(event.lease_id, {
        reason: event.reason,
        atMs: event.at_ms,
        endMs: o.endOf(event.lease_id),
      });
      o.logger.info({ ...log, reason: event.reason }, 'lease.revoke handled');
    }
    await m.ack();
  } catch (err) {
    const delayMs = redeliveryDelayMs(m.deliveryCount);
    o.logger.warn(
      { subject: m.subject, err, delayMs },
      'lease event not done; delivered again later',
    );
    m.nak(delayMs);
  } finally {
    clearInterval(keepAlive);
  }
}
