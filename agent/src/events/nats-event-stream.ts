// The agent's durable pull consumer on NATS JetStream (docs/architecture.md
// flow 2). The exchange owns the stream and creates the consumer at Attach; the
// agent only pulls from it, with replies under its own inbox prefix (its
// NATS credentials allow nothing else, deploy/nats/). Reconnects forever;
// one consume() loop survives a server restart thanks to its idle
// heartbeats (test/agent-nats-restart.test.ts).
//
// A server that lost its JetStream data (started again on an empty store)
// has neither the stream nor this consumer: the consume loop stops, says so
// once, asks the exchange to make them again (`recreate`: Attach again,
// whose answer makes the consumer as at the first Attach) and consumes from
// the new consumer without a restart (test/nats-data-loss.test.ts). Events
// lost with the store are found by reconciliation (D30).

import { JetStreamApiCodes, JetStreamApiError, jetstream } from '@nats-io/jetstream';
import type { Consumer, ConsumerMessages, JetStreamClient, JsMsg } from '@nats-io/jetstream';
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
  /**
   * The consumer (or its stream) is gone: ask its owner, the exchange, to
   * make it again. Rejects when that could not be asked; tried again.
   */
  readonly recreate?: () => Promise<void>;
}

/**
 * How long a pull request waits on the server; the idle heartbeats come
 * every half of it, and a consumer whose check failed is checked again
 * after a random 0.5 to 1.5 times it (the client's default, 30 s, left an
 * agent without events for up to 45 s after its server came back).
 */
const PULL_EXPIRES_MS = 5_000;

/** The consumer or its stream does not exist (NATS lost its data, or they were deleted). */
function missing(err: unknown): boolean {
  if (err instanceof JetStreamApiError) {
    return (
      err.code === JetStreamApiCodes.ConsumerNotFound ||
      err.code === JetStreamApiCodes.StreamNotFound
    );
  }
  // How consume() words it when it stops for a missing resource (the
  // check after a reconnection, or the server's 409 to a waiting pull).
  return (
    err instanceof Error &&
    ['consumer not found', 'stream not found', 'consumer deleted', 'stream deleted'].includes(
      err.message,
    )
  );
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

export class NatsEventStream implements EventStream {
  /** Since when the consumer is missing (logged once), undefined while it is there. */
  private lostAt: number | undefined;

  /** Since the connection dropped, until it is back (the agent's /readyz). */
  private disconnected = false;

  private constructor(
    private readonly nc: NatsConnection,
    private readonly o: NatsEventStreamOptions,
  ) {
    void (async () => {
      for await (const st of nc.status()) {
        if (st.type === 'disconnect') this.disconnected = true;
        else if (st.type === 'reconnect') this.disconnected = false;
      }
    })();
  }

  problem(): string | undefined {
    if (this.nc.isClosed()) return 'the NATS connection is closed';
    if (this.disconnected) return 'NATS disconnected; reconnecting';
    if (this.lostAt !== undefined)
      return 'the event consumer is missing (NATS lost its data?); the exchange is asked to make it again';
    return undefined;
  }

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
    let stopping = false;
    let messages: ConsumerMessages | undefined;
    // Any other failure of the first look (permissions) fails the agent, as before.
    let consumer: Consumer | undefined = await this.consumer(js, () => stopping);
    const loop = (async () => {
      while (!stopping) {
        try {
          consumer ??= await this.consumer(js, () => stopping);
          if (consumer === undefined) break;
          messages = await consumer.consume({
            max_messages: this.o.maxInFlight ?? 16,
            expires: PULL_EXPIRES_MS,
            // A missing consumer or stream ends it: this loop asks for them again.
            abort_on_missing_resource: true,
          });
          void this.watch(messages);
          for await (const m of messages) handler(wrap(m));
        } catch (err) {
          if (missing(err)) this.lost();
          else if (!stopping)
            this.o.logger.error({ err }, 'event consumer failed; starting it again');
        }
        // Looked up again (made again if missing) before consuming again.
        consumer = undefined;
        if (!stopping && this.lostAt === undefined) await sleep(1_000);
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

  /**
   * The consumer, once it exists: while it (or its stream) is missing the
   * exchange is asked to make it again, at once and then every few
   * seconds; undefined if stopped meanwhile.
   */
  private async consumer(
    js: JetStreamClient,
    stopped: () => boolean,
  ): Promise<Consumer | undefined> {
    const { stream, consumer: name } = this.o.source;
    for (let attempt = 0; !stopped(); attempt++) {
      try {
        const c = await js.consumers.get(stream, name);
        if (this.lostAt !== undefined) {
          this.o.logger.info(
            { stream, consumer: name, missingMs: Date.now() - this.lostAt },
            'event consumer there again; consuming',
          );
          this.lostAt = undefined;
        }
        return c;
      } catch (err) {
        if (!missing(err)) throw err;
        this.lost();
      }
      const backoff = Math.min(500 * 2 ** attempt, 5_000);
      if (this.o.recreate === undefined) {
        await sleep(backoff);
        continue;
      }
      try {
        await this.o.recreate();
        // Made: look again at once (the first attempts), then not more often than every 2 s.
        if (attempt >= 2) await sleep(2_000);
      } catch (err) {
        this.o.logger.debug({ err }, 'the exchange could not make the event consumer again yet');
        await sleep(backoff);
      }
    }
    return undefined;
  }

  /** The consumer is missing: said once, until it is there again. */
  private lost(): void {
    if (this.lostAt !== undefined) return;
    this.lostAt = Date.now();
    const { stream, consumer } = this.o.source;
    this.o.logger.warn(
      { stream, consumer },
      'event consumer gone (NATS lost its data?): asking the exchange to make it again; reconciliation covers the events lost with it',
    );
  }

  private async watch(messages: ConsumerMessages): Promise<void> {
    for await (const s of messages.status()) {
      // A missing consumer is said once by the consume loop (lost()).
      if (s.type === 'heartbeats_missed') {
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
