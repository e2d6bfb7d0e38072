// The outbox relay on this machine's PostgreSQL and NATS JetStream, with a
// stream and subjects of this run's own.

import { randomBytes } from 'node:crypto';

import { AckPolicy, DeliverPolicy, jetstream, jetstreamManager } from '@nats-io/jetstream';
import type { JetStreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import type { NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { SUBJECTS } from '@gpux/shared';
import type { LeaseEvent } from '@gpux/shared';

import { SILENT_LOGGER } from '../logger.js';
import { testExchange } from '../market/testing/test-exchange.js';
import type { TestExchange } from '../market/testing/test-exchange.js';
import { JetStreamPublisher } from './jetstream-publisher.js';
import { OutboxRelay } from './outbox-relay.js';
import type { EventPublisher } from './publisher.js';

const NATS_URL = process.env['GPUX_TEST_NATS_URL'] ?? 'nats://127.0.0.1:4222';
const run = randomBytes(4).toString('hex');
const STREAM = `GPUX_TEST_${run}`;
const ROOT = `gpuxtest${run}`;

let ex: TestExchange;
let nc: NatsConnection;
let jsm: JetStreamManager;
let publisher: JetStreamPublisher;

beforeAll(async () => {
  ex = await testExchange();
  publisher = await JetStreamPublisher.connect({
    url: NATS_URL,
    stream: STREAM,
    subjectRoot: ROOT,
    logger: SILENT_LOGGER,
  });
  nc = await connect({ servers: NATS_URL.replace('nats://', '') });
  jsm = await jetstreamManager(nc);
});

afterAll(async () => {
  await publisher?.close();
  await jsm?.streams.delete(STREAM).catch(() => undefined);
  await nc?.close();
  await ex?.close();
});

/**
 * A provider's cluster of `nodes` nodes, all offered at $2 in a book no
 * other test of this file uses, and a buyer with an SSH key.
 */
async function market(nodes: number, gpuType: string, zone: string) {
  const provider = await ex.account(`provider-${Math.random()}`);
  const clusterId = await ex.cluster(provider, nodes, gpuType, zone);
  const sell = await ex.call('POST', '/v1/orders', provider.token, {
    side: 'sell',
    gpu_type: gpuType,
    zone,
    gpu_count: nodes * 8,
    duration_hours: 720,
    limit_price: 2,
    cluster_id: clusterId,
  });
  expect(sell.status).toBe(200);
  const buyer = await ex.account(`buyer-${Math.random()}`);
  const key = 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFlIMmyFnHK4frjyOGUIT3IthFXFGYi7+K7mXLlcCaXt';
  expect(
    (await ex.call('POST', '/v1/ssh_keys', buyer.token, { name: 'k', public_key: key })).status,
  ).toBe(201);
  const buy = async (): Promise<string> => {
    const r = await ex.call('POST', '/v1/orders', buyer.token, {
      side: 'buy',
      gpu_type: gpuType,
      zone,
      gpu_count: 8,
      duration_hours: 2,
    });
    expect(r.status).toBe(200);
    return r.json['lease_id'] as string;
  };
  return { clusterId, buyer, key, buy };
}

/** Every event of a cluster in its agent's consumer, as an agent would read them. */
async function eventsOf(clusterId: string, count: number): Promise<LeaseEvent[]> {
  const source = await publisher.ensureAgentConsumer(clusterId);
  expect(source.filterSubject).toBe(`${ROOT}.cluster.${clusterId}.>`);
  const consumer = await jetstream(nc).consumers.get(STREAM, source.consumer);
  const out: LeaseEvent[] = [];
  const batch = await consumer.fetch({ max_messages: count, expires: 2_000 });
  for await (const m of batch) {
    out.push(m.json<LeaseEvent>());
    m.ack();
  }
  return out;
}

async function unpublished(): Promise<number> {
  const [r] = await ex.db.query<{ n: number }>(
    'SELECT count(*)::bigint AS n FROM outbox WHERE published_ms IS NULL',
  );
  return r?.n ?? 0;
}

async function until(check: () => Promise<boolean>): Promise<void> {
  for (let i = 0; i < 200; i++) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error('timed out');
}

describe('the outbox relay (docs/architecture.md flow 2, D29)', () => {
  it("publishes a fill's provision event with the buyer's key snapshot, and marks it published", async () => {
    const relay = new OutboxRelay(ex.db, publisher, { logger: SILENT_LOGGER, idleMs: 20 });
    ex.market.onEvents(() => relay.wake());
    relay.start();
    try {
      const m = await market(2, 'h200', 'us-east-1');
      const leaseId = await m.buy();
      await until(async () => (await unpublished()) === 0);
      const [event] = await eventsOf(m.clusterId, 1);
      expect(event).toMatchObject({
        kind: 'lease.provision',
        lease_id: leaseId,
        cluster_id: m.clusterId,
        ssh_public_keys: [m.key],
      });
      const [row] = await ex.db.query<{ event_id: string }>(
        "SELECT event_id FROM outbox WHERE payload->>'lease_id' = $1",
        [leaseId],
      );
      expect(event?.event_id).toBe(row?.event_id);
    } finally {
      await relay.close();
    }
  });

  it('publishing the same rows again stores nothing twice (message id = event id)', async () => {
    const relay = new OutboxRelay(ex.db, publisher, { logger: SILENT_LOGGER, idleMs: 20 });
    relay.start();
    try {
      const m = await market(1, 'h200', 'eu-west-1');
      await m.buy();
      await until(async () => (await unpublished()) === 0);
      const before = (await jsm.streams.info(STREAM)).state.messages;
      // As after a crash between the publish and the mark.
      await ex.db.query('UPDATE outbox SET published_ms = NULL');
      relay.wake();
      await until(async () => (await unpublished()) === 0);
      expect((await jsm.streams.info(STREAM)).state.messages).toBe(before);
    } finally {
      await relay.close();
    }
  });

  it('keeps rows while the publisher fails, retries them with the same ids, and publishes each once', async () => {
    let failures = 3;
    const seen: string[] = [];
    const flaky: EventPublisher = {
      publish: async (subject, eventId, payload) => {
        if (failures > 0) {
          failures--;
          throw new Error('TIMEOUT');
        }
        seen.push(eventId);
        await publisher.publish(subject, eventId, payload);
      },
      ensureAgentConsumer: (c) => publisher.ensureAgentConsumer(c),
      problem: () => undefined,
      close: () => Promise.resolve(),
    };
    const m = await market(3, 'b300', 'us-east-1');
    const ids = [await m.buy(), await m.buy(), await m.buy()];
    const relay = new OutboxRelay(ex.db, flaky, {
      logger: SILENT_LOGGER,
      idleMs: 20,
      backoffMs: 5,
    });
    relay.start();
    try {
      await until(async () => (await unpublished()) === 0);
      expect(relay.stats.failures).toBeGreaterThanOrEqual(1);
      const events = await eventsOf(m.clusterId, 3);
      expect(events.map((e) => e.lease_id)).toEqual(ids);
      expect(new Set(seen).size).toBe(seen.length);
    } finally {
      await relay.close();
    }
  });

  it('marks what it published by the next round, or at close: nothing published stays unmarked', async () => {
    // A poll far away, so no later round can do the marking for close().
    const relay = new OutboxRelay(ex.db, publisher, { logger: SILENT_LOGGER, idleMs: 60_000 });
    const m = await market(2, 'b200', 'us-west-1');
    const ids = [await m.buy(), await m.buy()];
    relay.start();
    try {
      await until(() => Promise.resolve(relay.stats.published >= ids.length));
    } finally {
      await relay.close();
    }
    expect(await unpublished()).toBe(0);
    const events = await eventsOf(m.clusterId, 2);
    expect(events.map((e) => e.lease_id)).toEqual(ids);
    // Each provision event carries the buyer's keys of the fill, in order (D32).
    expect(events.map((e) => (e.kind === 'lease.provision' ? e.ssh_public_keys : []))).toEqual([
      [m.key],
      [m.key],
    ]);
  });

  it('the consumer it makes for an agent is durable, explicit-ack, with one filter subject', async () => {
    const source = await publisher.ensureAgentConsumer('cls_consumercheck');
    const info = await jsm.consumers.info(STREAM, source.consumer);
    expect(info.config).toMatchObject({
      durable_name: 'agent_cls_consumercheck',
      filter_subject: `${ROOT}.cluster.cls_consumercheck.>`,
      ack_policy: AckPolicy.Explicit,
    });
    // Made once: asking again changes nothing.
    await publisher.ensureAgentConsumer('cls_consumercheck');
    expect((await jsm.consumers.info(STREAM, source.consumer)).created).toBe(info.created);
  });

  it('D30: an agent consumer takes the ack wait setting (GPUX_NATS_ACK_WAIT_SECONDS), also one made before it changed', async () => {
    const cluster = 'cls_ackwaitcheck';
    await publisher.ensureAgentConsumer(cluster); // the default, 30 s
    const changed = await JetStreamPublisher.connect({
      url: NATS_URL,
      stream: STREAM,
      subjectRoot: ROOT,
      agentAckWaitMs: 2_000,
      logger: SILENT_LOGGER,
    });
    try {
      const source = await changed.ensureAgentConsumer(cluster);
      const info = await jsm.consumers.info(STREAM, source.consumer);
      expect(info.config.ack_wait).toBe(2_000 * 1_000_000); // nanoseconds
    } finally {
      await changed.close();
    }
  });
  it('a stream lost under it (NATS lost its data): the next publish makes it again, with the agent consumers it made', async () => {
    const source = await publisher.ensureAgentConsumer('cls_losscheck');
    await jsm.streams.delete(STREAM);
    // No stream takes the subject: that publish is not stored (the relay tries it again).
    const subject = SUBJECTS.leaseRevoke('cls_losscheck');
    await expect(publisher.publish(subject, 'evt_loss_1', '{}')).rejects.toThrow();
    await publisher.publish(subject, 'evt_loss_1', '{}');
    expect((await jsm.streams.info(STREAM)).state.messages).toBe(1);
    // Its consumer made again as at first: every event of the stream, from its first.
    const info = await jsm.consumers.info(STREAM, source.consumer);
    expect(info.config).toMatchObject({
      filter_subject: `${ROOT}.cluster.cls_losscheck.>`,
      deliver_policy: DeliverPolicy.All,
      ack_policy: AckPolicy.Explicit,
    });
    expect(info.num_pending).toBe(1);
  });
});
