// The agent's durable pull consumer on NATS JetStream (docs/architecture.md
// flow 2). The exchange owns the stream and creates the consumer at Attach; the
// agent only pulls from it, with replies under its own inbox prefix (its
// NATS credentials allow nothing else, deploy/nats/). Reconnects forever;
// one consume() loop survives a server restart thanks to its idle
// heartbeats (test/agent-nats-restart.test.ts).

import { jetstream } from '@nats-io/jetstream';
import type { ConsumerMessages, JsMsg } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { connectNats } from '@gpux/shared';
import type { NatsCredentials } from '@gpux/shared';

import type { Logger } from '../logger.js';
import type { EventMessage, EventStream, EventSubscription } from './event-stream.js';

export interface NatsSource {
  readonly stream: string;
  readonly consumer: string;
  readonly inboxPrefix: string;
}

export interface NatsEventStreamOptions {
  /** nats://[user:password@]host:port or tls://… */
  readonly url: string;
  /** NATS_CREDS: a .creds file (operator mode) or a user nkey seed. */
  readonly creds: NatsCredentials | undefined;
  readonly source: NatsSource;
  readonly name: string;
  readonly logger: Logger;
  /** How many messages may be handled at once. */
  readonly maxInFlight?: number;
}

export class NatsEventStream implements EventStream {
  private constructor(
    private readonly nc: NatsConnection,
    private readonly o: NatsEventStreamOptions,
  ) {}

  static async connect(o: NatsEventStreamOptions): Promise<NatsEventStream> {
    // The connection as the exchange makes its own (shared/src/nats-connection.ts).
    const nc = await connectNats({
      url: o.url,
      creds: o.creds,
      name: o.name,
      inboxPrefix: o.source.inboxPrefix,
      logger: o.logger,
    });
    return new NatsEventStream(nc, o);
  }

  async consume(handler: (m: EventMessage) => void): Promise<EventSubscription> {
    const js = jetstream(this.nc);
    const consumer = await js.consumers.get(this.o.source.stream, this.o.source.consumer);
    let stopping = false;
    let messages: ConsumerMessages | undefined;
    const loop = (async () => {
      // consume() ends only if its consumer disappears; start it again then.
      while (!stopping) {
        try {
          messages = await consumer.consume({ max_messages: this.o.maxInFlight ?? 16 });
          void this.watch(messages);
          for await (const m of messages) handler(wrap(m));
        } catch (err) {
          if (!stopping) this.o.logger.error({ err }, 'event consumer failed; starting it again');
        }
        if (!stopping) await new Promise((r) => setTimeout(r, 1_000));
      }
    })();
    return {
      stop: async () => {
        stopping = true;
        await messages?.close();
        await loop;
      },
    };
  }

  private async watch(messages: ConsumerMessages): Promise<void> {
    for await (const s of messages.status()) {
      if (s.type === 'heartbeats_missed' || s.type === 'consumer_not_found') {
        this.o.logger.warn({ status: s.type }, `event consumer: ${s.type}`);
      }
    }
  }

  async close(): Promise<void> {
    await this.nc.close();
  }
}

function wrap(m: JsMsg): EventMessage {
  return {
    subject: m.subject,
    data: m.string(),
    deliveryCount: m.info.deliveryCount,
    // Confirmed by the server: an ack lost on the way would redeliver work done.
    ack: async () => {
      await m.ackAck();
    },
    nak: (delayMs) => m.nak(delayMs),
    working: () => m.working(),
  };
}
