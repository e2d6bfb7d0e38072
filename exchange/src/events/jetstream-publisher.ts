// NATS JetStream as the relay's publisher (docs/architecture.md flow 2). The
// exchange owns the stream and the agents' consumers; agents only pull from
// their own (deploy/nats/ has the server configuration an operator writes).

import {
  AckPolicy,
  JetStreamApiCodes,
  JetStreamApiError,
  DeliverPolicy,
  RetentionPolicy,
  StorageType,
  jetstream,
  jetstreamManager,
} from '@nats-io/jetstream';
import type { JetStreamClient, JetStreamManager } from '@nats-io/jetstream';
import { nanos } from '@nats-io/transport-node';
import type { NatsConnection } from '@nats-io/transport-node';
import { readFileSync } from 'node:fs';

import {
  EVENT_STREAM,
  SUBJECTS,
  SUBJECT_ROOT,
  agentConsumerName,
  agentInboxPrefix,
  connectNats,
  describeNats,
  parseNatsCredentials,
} from '@gpux/shared';

import type { Logger } from '../logger.js';
import type { AgentEventSource, EventPublisher } from './publisher.js';

export interface JetStreamOptions {
  /** nats://[user:password@]host:port or tls://… (shared/src/nats-connection.ts). */
  readonly url: string;
  /** A NATS credentials file: a .creds file or an nkey seed (shared/src/nats-credentials.ts). */
  readonly credsFile?: string | undefined;
  /** The stream's name (tests use their own). */
  readonly stream?: string | undefined;
  /**
   * The first token of every subject, `gpux` unless tests need streams of
   * their own (two streams of one NATS account may not share subjects).
   */
  readonly subjectRoot?: string | undefined;
  /** Within this, a message id published again is stored once. */
  readonly duplicateWindowMs?: number | undefined;
  /** How long events are kept in the stream. */
  readonly maxAgeMs?: number | undefined;
  /** A publish whose ack has not come within this is retried by the relay. */
  readonly publishTimeoutMs?: number | undefined;
  /** A delivered event not acked by its agent within this is delivered again. */
  readonly agentAckWaitMs?: number | undefined;
  readonly logger: Logger;
}

/** Only a stream or consumer that does not exist is made; any other failure is thrown. */
function notFound(err: unknown, code: number): boolean {
  return err instanceof JetStreamApiError && err.code === code;
}

/**
 * A publish that no stream took: NATS answers "no responders" (which the
 * client words as "jetstream is not enabled") when no stream listens on
 * the subject any more, as after the server lost its store.
 */
function noStream(err: unknown): boolean {
  return (
    // JetStreamNotEnabled, which the package does not export.
    (err instanceof Error && err.name === 'JetStreamNotEnabled') ||
    notFound(err, JetStreamApiCodes.StreamNotFound)
  );
}

/**
 * The exchange starts while NATS is down (its events wait in the outbox):
 * the connection is made in the background, and the stream is made (or
 * updated) before the first publish, again after a failed attempt.
 *
 * NATS may lose its JetStream data (a server started again on an empty
 * store: docs/operations.md "Recovering from NATS data loss"). The stream
 * is looked for again after every reconnection and after a publish that no
 * stream took; when it was gone it is made again, with the consumers of
 * the agents this process attached, and the relay publishes what is still
 * unpublished in the outbox into it. Events the lost stream held are not
 * published again: the agents' reconciliation (D30) finds their leases.
 */
export class JetStreamPublisher implements EventPublisher {
  private ready: Promise<JetStreamManager> | undefined;
  private readonly js: JetStreamClient;
  private readonly stream: string;
  private readonly root: string;
  /** The clusters whose agent consumer this process made or found (Attach). */
  private readonly consumers = new Set<string>();
  /** The stream was made by this process at least once or found: a missing one now was lost. */
  private known = false;
  private closed = false;
  /** Since the connection dropped, until it is back (GET /readyz). */
  private disconnected = false;
  private readonly reconnected: (() => void)[] = [];

  private constructor(
    private readonly nc: NatsConnection,
    private readonly o: JetStreamOptions,
  ) {
    this.js = jetstream(nc);
    this.stream = o.stream ?? EVENT_STREAM;
    this.root = o.subjectRoot ?? SUBJECT_ROOT;
    void this.watchReconnects();
  }

  /** After a reconnection the server may be a new one on an empty store: look again. */
  private async watchReconnects(): Promise<void> {
    for await (const s of this.nc.status()) {
      if (s.type === 'disconnect') this.disconnected = true;
      if (s.type !== 'reconnect' || this.closed) continue;
      this.disconnected = false;
      this.ready = undefined;
      // Retried until the stream is there: JetStream may answer only a moment after the server.
      for (let wait = 100; !this.closed && !this.nc.isClosed(); wait = Math.min(wait * 2, 5_000)) {
        try {
          await this.manager();
          for (const f of this.reconnected) f();
          break;
        } catch (err) {
          this.o.logger.debug({ err }, 'the JetStream stream could not be checked yet');
          await new Promise((r) => setTimeout(r, wait));
        }
      }
    }
  }

  static async connect(o: JetStreamOptions): Promise<JetStreamPublisher> {
    const nc = await connectNats({
      url: o.url,
      creds:
        o.credsFile === undefined
          ? undefined
          : parseNatsCredentials(readFileSync(o.credsFile, 'utf8')),
      name: 'gpux-exchange',
      reconnectWaitMs: 200,
      logger: o.logger,
    });
    return new JetStreamPublisher(nc, o);
  }

  /**
   * The server as the start banner names it: its URL without a password,
   * and whether this connection is encrypted (tls://, or a server that
   * requires or offers TLS: the client takes it then).
   */
  describe(): string {
    const info = this.nc.info;
    const tls = info?.tls_required === true || info?.tls_available === true;
    return `${describeNats(this.o.url)}, ${tls ? 'TLS' : 'no TLS'}`;
  }

  /**
   * `f` runs whenever the stream is there again after a reconnection (the
   * relay, waiting out its back-off after failed publishes, tries at once).
   */
  onReconnected(f: () => void): void {
    this.reconnected.push(f);
  }

  /** The stream, made or brought up to this configuration. */
  private manager(): Promise<JetStreamManager> {
    this.ready ??= (async () => {
      const jsm = await jetstreamManager(this.nc);
      const config = {
        name: this.stream,
        subjects: [`${this.root}.cluster.>`],
        retention: RetentionPolicy.Limits,
        storage: StorageType.File,
        duplicate_window: nanos(this.o.duplicateWindowMs ?? 10 * 60_000),
        max_age: nanos(this.o.maxAgeMs ?? 7 * 24 * 3_600_000),
      };
      try {
        await jsm.streams.info(this.stream);
        await jsm.streams.update(this.stream, config);
      } catch (err) {
        if (!notFound(err, JetStreamApiCodes.StreamNotFound)) throw err;
        await jsm.streams.add(config);
        if (this.known) {
          // Its consumers went with it: the agents' consume loops find them again.
          for (const clusterId of this.consumers) await this.makeConsumer(jsm, clusterId);
          this.o.logger.warn(
            { stream: this.stream, consumers: this.consumers.size },
            "the JetStream stream was gone (NATS lost its data?): made it again with the agents' consumers; unpublished outbox events follow, reconciliation finds the rest",
          );
        }
      }
      this.known = true;
      return jsm;
    })().catch((err: unknown) => {
      this.ready = undefined;
      throw err;
    });
    return this.ready;
  }

  async publish(subject: string, eventId: string, payload: string): Promise<void> {
    const ready = this.manager();
    await ready;
    try {
      await this.js.publish(this.rooted(subject), payload, {
        msgID: eventId,
        timeout: this.o.publishTimeoutMs ?? 2_000,
      });
    } catch (err) {
      // No stream took it: look for the stream again before the relay's next try.
      if (noStream(err) && this.ready === ready) this.ready = undefined;
      throw err;
    }
  }

  async ensureAgentConsumer(clusterId: string): Promise<AgentEventSource> {
    let ready = this.manager();
    let jsm = await ready;
    try {
      await this.makeConsumer(jsm, clusterId);
    } catch (err) {
      // The stream went since it was last seen (NATS lost its data): make it, then the consumer.
      if (!notFound(err, JetStreamApiCodes.StreamNotFound)) throw err;
      if (this.ready === ready) this.ready = undefined;
      ready = this.manager();
      jsm = await ready;
      await this.makeConsumer(jsm, clusterId);
    }
    this.consumers.add(clusterId);
    return {
      stream: this.stream,
      consumer: agentConsumerName(clusterId),
      filterSubject: this.rooted(SUBJECTS.cluster(clusterId)),
      inboxPrefix: agentInboxPrefix(clusterId),
    };
  }

  /**
   * A cluster's agent consumer, made when missing: every event of the
   * stream from its first (an agent made again after NATS lost its data
   * gets what the relay published since, D30 makes the rest agree).
   */
  private async makeConsumer(jsm: JetStreamManager, clusterId: string): Promise<void> {
    const name = agentConsumerName(clusterId);
    const ackWait = nanos(this.o.agentAckWaitMs ?? 30_000);
    try {
      const info = await jsm.consumers.info(this.stream, name);
      // A changed GPUX_NATS_ACK_WAIT_SECONDS applies to consumers made before it too.
      if (info.config.ack_wait !== ackWait) {
        await jsm.consumers.update(this.stream, name, { ack_wait: ackWait });
      }
    } catch (err) {
      if (!notFound(err, JetStreamApiCodes.ConsumerNotFound)) throw err;
      await jsm.consumers.add(this.stream, {
        durable_name: name,
        filter_subject: this.rooted(SUBJECTS.cluster(clusterId)),
        ack_policy: AckPolicy.Explicit,
        deliver_policy: DeliverPolicy.All,
        ack_wait: ackWait,
        max_deliver: -1,
      });
    }
  }

  /** `gpux.cluster.…` under this publisher's subject root. */
  private rooted(subject: string): string {
    return this.root === SUBJECT_ROOT ? subject : this.root + subject.slice(SUBJECT_ROOT.length);
  }

  problem(): string | undefined {
    if (this.closed || this.nc.isClosed()) return 'the NATS connection is closed';
    if (this.disconnected) return 'NATS disconnected; reconnecting';
    return undefined;
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.nc.drain();
  }
}
