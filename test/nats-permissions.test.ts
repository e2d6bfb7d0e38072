// D29: NATS is multi-tenant. A private nats-server started with the
// configuration deploy/nats/ documents (made by the same functions as
// `gpux nats-config`): one provider's agent reads its own cluster's events,
// and can neither read another cluster's nor touch the stream.

import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { createUser } from '@nats-io/nkeys';
import { connect, nkeyAuthenticator } from '@nats-io/transport-node';
import type { NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import {
  JetStreamPublisher,
  SILENT_LOGGER,
  agentPermissions,
  authorizationBlock,
  exchangePermissions,
} from '@gpux/exchange';
import { SUBJECTS, agentConsumerName, agentInboxPrefix } from '@gpux/shared';

import { PrivateNats } from './support/nats-server.js';

const exchangeKey = createUser();
const agentA = createUser();
const agentB = createUser();
const A = 'cls_alpha';
const B = 'cls_bravo';

let nats: PrivateNats;
let publisher: JetStreamPublisher;
let asA: NatsConnection;
const text = (b: Uint8Array): string => new TextDecoder().decode(b);

beforeAll(async () => {
  nats = await PrivateNats.start(
    authorizationBlock([
      {
        nkey: exchangeKey.getPublicKey(),
        permissions: exchangePermissions(),
        comment: 'the exchange',
      },
      { nkey: agentA.getPublicKey(), permissions: agentPermissions(A), comment: `agent of ${A}` },
      { nkey: agentB.getPublicKey(), permissions: agentPermissions(B), comment: `agent of ${B}` },
    ]),
  );
  const seedFile = join(mkdtempSync(join(tmpdir(), 'gpux-seed-')), 'exchange.nk');
  writeFileSync(seedFile, text(exchangeKey.getSeed()), { mode: 0o600 });
  publisher = await JetStreamPublisher.connect({
    url: nats.url,
    credsFile: seedFile,
    logger: SILENT_LOGGER,
  });
  for (const c of [A, B]) {
    await publisher.ensureAgentConsumer(c);
    await publisher.publish(SUBJECTS.leaseProvision(c), `evt_${c}`, JSON.stringify({ cluster: c }));
  }
  // As the agent of A connects (agent/): its own nkey, its own inbox prefix.
  asA = await connect({
    servers: `127.0.0.1:${nats.port}`,
    authenticator: nkeyAuthenticator(agentA.getSeed()),
    inboxPrefix: agentInboxPrefix(A),
  });
}, 60_000);

afterAll(async () => {
  await asA?.close();
  await publisher?.close();
  await nats?.stop();
});

describe('NATS permissions per provider (D29, deploy/nats/)', () => {
  it("an agent reads and acks its own cluster's events", async () => {
    const consumer = await jetstream(asA).consumers.get('GPUX_EVENTS', agentConsumerName(A));
    const m = await consumer.next({ expires: 2_000 });
    expect(m?.subject).toBe(SUBJECTS.leaseProvision(A));
    expect(m?.json()).toEqual({ cluster: A });
    expect(await m?.ackAck()).toBe(true);
  });

  it("cannot pull from another cluster's consumer", async () => {
    await expect(
      (async () => {
        const consumer = await jetstream(asA).consumers.get('GPUX_EVENTS', agentConsumerName(B));
        return consumer.next({ expires: 1_000 });
      })(),
    ).rejects.toThrow(/permission|timeout/i);
  });

  it("cannot subscribe to another cluster's subjects or its inbox", async () => {
    for (const subject of [SUBJECTS.cluster(B), `${agentInboxPrefix(B)}.>`, '>']) {
      const denied = new Promise<string>((resolve) => {
        void (async () => {
          for await (const s of asA.status()) {
            if (s.type === 'error') resolve(String(s.error));
          }
        })();
      });
      const sub = asA.subscribe(subject);
      const ended = (async () => {
        try {
          for await (const m of sub) return `got ${m.subject}`;
          return 'closed';
        } catch (err) {
          return String(err);
        }
      })();
      const why = await Promise.race([ended, denied]);
      expect(why).toMatch(/permission/i);
      sub.unsubscribe();
    }
  });

  it('cannot delete the stream, and the stream is still there', async () => {
    const jsm = await jetstreamManager(asA, { checkAPI: false });
    await expect(jsm.streams.delete('GPUX_EVENTS')).rejects.toThrow(/permission|timeout/i);
    const exchange = await connect({
      servers: `127.0.0.1:${nats.port}`,
      authenticator: nkeyAuthenticator(exchangeKey.getSeed()),
    });
    try {
      const info = await (await jetstreamManager(exchange)).streams.info('GPUX_EVENTS');
      expect(info.state.messages).toBe(2);
    } finally {
      await exchange.close();
    }
  });
});
