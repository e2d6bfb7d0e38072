// One lease event, start to ack (D29): its work goes to the lease queue and
// the event is acked only once that work is done, so a crash redelivers it.
// A duplicate (a redelivery, a replay) merges into the work already queued
// for its lease and is acked when that is done, never because it was a
// duplicate. Work that fails is retried by the queue with its one policy
// while the event waits (telling the server it is still at work). A payload
// that can never be handled is logged and acked, so it does not come back
// forever; an event whose work the agent's stop left unfinished is handed
// back at once, for the next start.

import type { LeaseQueue } from '../leases/lease-queue.js';
import { QueueStoppedError, backoffMs } from '../leases/work-queue.js';
import type { Logger } from '../logger.js';
import { leaseSpecFromEvent } from '../provisioner/lease-spec.js';
import type { EventMessage } from './event-stream.js';
import { EventFormatError, parseLeaseEvent } from './parse-event.js';

export interface EventHandlerOptions {
  readonly clusterId: string;
  readonly leases: LeaseQueue;
  readonly logger: Logger;
  /** The lease's end, if known here (for how long its revocation is remembered). */
  readonly endOf: (leaseId: string) => number | undefined;
  /** How often a long wait tells the server the event is still being worked on. */
  readonly workingEveryMs?: number;
}

export async function handleEvent(m: EventMessage, o: EventHandlerOptions): Promise<void> {
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
      const outcome = await o.leases.provision(leaseSpecFromEvent(event));
      o.logger.info({ ...log, outcome }, 'lease.provision handled');
    } else {
      await o.leases.revoke(event.lease_id, {
        reason: event.reason,
        atMs: event.at_ms,
        endMs: o.endOf(event.lease_id),
      });
      o.logger.info({ ...log, reason: event.reason }, 'lease.revoke handled');
    }
    await m.ack();
  } catch (err) {
    if (err instanceof QueueStoppedError) {
      // The agent is stopping: delivered again to the next start (reconciliation covers it too).
      o.logger.info({ subject: m.subject, err }, 'lease event left for the next start');
      m.nak(0);
      return;
    }
    // Not the work (the queue retries that): the ack failed, or a bug. Delivered again later.
    const delayMs = backoffMs(m.deliveryCount);
    o.logger.error(
      { subject: m.subject, err, delayMs },
      'lease event not handled; delivered again later',
    );
    m.nak(delayMs);
  } finally {
    clearInterval(keepAlive);
  }
}
