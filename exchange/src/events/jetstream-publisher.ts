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
import { connect, credsAuthenticator, nanos, nkeyAuthenticator } from '@nats-io/transport-node';
import type { Authenticator, NatsConnection } from '@nats-io/transport-node';
import { readFileSync } from 'node:fs';

import {
  EVENT_STREAM,
  SUBJECTS,
  SUBJECT_ROOT,
  agentConsumerName,
  agentInboxPrefix,
  parseNatsCredentials,
} from '@gpux/shared';

import type { Logger } from '../logger.js';
import type { AgentEventSource, EventPublisher } from './publisher.js';

export interface JetStreamOptions {
  /** nats://[user:password@]host:port */
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

function authenticatorOf(file: string): Authenticator {
  const c = parseNatsCredentials(readFileSync(file, 'utf8'));
  return c.kind === 'creds' ? credsAuthenticator(c.bytes) : nkeyAuthenticator(c.seed);
}

/**
 * The exchange starts while NATS is down (its events wait in the outbox):
 * the connection is made in the background, and the stream is made (or
 * updated) before the first publish, again after a failed attempt.
 */
export class JetStreamPublisher implements EventPublisher {
  private ready: Promise<JetStreamManager> | undefined;
  private readonly js: JetStreamClient;
  private readonly stream: string;
  private readonly root: string;

  private constructor(
    private readonly nc: NatsConnection,
    private readonly o: JetStreamOptions,
  ) {
    this.js = jetstream(nc);
    this.stream = o.stream ?? EVENT_STREAM;
    this.root = o.subjectRoot ?? SUBJECT_ROOT;
  }

  static async connect(o: JetStreamOptions): Promise<JetStreamPublisher> {
    const url = new URL(o.url);
    // The first connection is waited for without end (waitOnFirstConnect),
    // and the client says nothing while it tries: a server that is down, or a
    // TLS certificate this process does not trust, would be silent.
    const started = Date.now();
    const waiting = setInterval(() => {
      o.logger.warn(
        { server: `${url.hostname}:${url.port || '4222'}`, waitingMs: Date.now() - started },
        'still connecting to NATS: is the server up, and is its TLS certificate trusted (NODE_EXTRA_CA_CERTS, deploy/nats/README.md)?',
      );
    }, 10_000);
    waiting.unref();
    const nc = await connect({
      servers: `${url.hostname}:${url.port || '4222'}`,
      // tls://: TLS or nothing (nats:// takes TLS too when the server requires it).
      ...(url.protocol === 'tls:' ? { tls: {} } : {}),
      name: 'gpux-exchange',
      ...(url.username === ''
        ? {}
        : { user: decodeURIComponent(url.username), pass: decodeURIComponent(url.password) }),
      ...(o.credsFile === undefined ? {} : { authenticator: authenticatorOf(o.credsFile) }),
      maxReconnectAttempts: -1,
      reconnectTimeWait: 200,
      waitOnFirstConnect: true,
    }).finally(() => clearInterval(waiting));
    void (async () => {
      for await (const s of nc.status()) {
        if (s.type === 'disconnect' || s.type === 'reconnect' || s.type === 'error') {
          o.logger.warn(
            { status: s.type, server: 'server' in s ? s.server : undefined },
            `NATS ${s.type}`,
          );
        }
      }
    })();
    return new JetStreamPublisher(nc, o);
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
      }
      return jsm;
    })().catch((err: unknown) => {
      this.ready = undefined;
      throw err;
    });
    return this.ready;
  }

  async publish(subject: string, eventId: string, payload: string): Promise<void> {
    await this.manager();
    await this.js.publish(this.rooted(subject), payload, {
      msgID: eventId,
      timeout: this.o.publishTimeoutMs ?? 2_000,
    });
  }

  async ensureAgentConsumer(clusterId: string): Promise<AgentEventSource> {
    const jsm = await this.manager();
    const name = agentConsumerName(clusterId);
    const filterSubject = this.rooted(SUBJECTS.cluster(clusterId));
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
        filter_subject: filterSubject,
        ack_policy: AckPolicy.Explicit,
        deliver_policy: DeliverPolicy.All,
        ack_wait: ackWait,
        max_deliver: -1,
      });
    }
    return {
      stream: this.stream,
      consumer: name,
      filterSubject,
      inboxPrefix: agentInboxPrefix(clusterId),
    };
  }

  /** `gpux.cluster.…` under this publisher's subject root. */
  private rooted(subject: string): string {
    return this.root === SUBJECT_ROOT ? subject : this.root + subject.slice(SUBJECT_ROOT.length);
  }

  async close(): Promise<void> {
    await this.nc.drain();
  }
}
