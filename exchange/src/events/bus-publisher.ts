// The in-process bus as the relay's publisher (NATS_URL unset, D34).

import { EVENT_STREAM, SUBJECTS, agentConsumerName, agentInboxPrefix } from '@gpux/shared';
import type { InProcessBus } from '@gpux/shared';

import type { AgentEventSource, EventPublisher } from './publisher.js';

export class BusPublisher implements EventPublisher {
  constructor(readonly bus: InProcessBus) {}

  publish(subject: string, eventId: string, payload: string): Promise<void> {
    this.bus.publish(subject, eventId, payload);
    return Promise.resolve();
  }

  ensureAgentConsumer(clusterId: string): Promise<AgentEventSource> {
    const source: AgentEventSource = {
      stream: EVENT_STREAM,
      consumer: agentConsumerName(clusterId),
      filterSubject: SUBJECTS.cluster(clusterId),
      inboxPrefix: agentInboxPrefix(clusterId),
    };
    this.bus.consumer(source.consumer, { filterSubject: source.filterSubject });
    return Promise.resolve(source);
  }

  /** In the same process: always there. */
  problem(): string | undefined {
    return undefined;
  }

  close(): Promise<void> {
    return Promise.resolve();
  }
}
