// The in-process bus of `gpux start` (D34) as an event stream: the agent in
// the exchange's process reads its consumer directly, no NATS involved.

import type { InProcessBus } from '@gpux/shared';

import type { EventMessage, EventStream, EventSubscription } from './event-stream.js';

export interface BusSource {
  readonly consumer: string;
  readonly filterSubject: string;
}

export class BusEventStream implements EventStream {
  constructor(
    private readonly bus: InProcessBus,
    private readonly source: BusSource,
  ) {}

  /** In the same process: always there. */
  problem(): string | undefined {
    return undefined;
  }

  consume(handler: (m: EventMessage) => void): Promise<EventSubscription> {
    const consumer = this.bus.consumer(this.source.consumer, {
      filterSubject: this.source.filterSubject,
    });
    const sub = consumer.consume((m) =>
      handler({
        subject: m.subject,
        data: m.data,
        deliveryCount: m.deliveryCount,
        ack: () => {
          m.ack();
          return Promise.resolve();
        },
        nak: (delayMs) => m.nak(delayMs),
        working: () => undefined,
      }),
    );
    return Promise.resolve({
      stop: () => {
        sub.stop();
        return Promise.resolve();
      },
    });
  }

  close(): Promise<void> {
    return Promise.resolve();
  }
}
