// What a process does while it owns the market (docs/ownership.md), started
// by the steward when it takes the market and stopped, in reverse, when it
// loses it or drains: apply the migrations, release the Idempotency-Key
// claims the last owner left in progress (D23), rebuild every book from the
// database (docs/architecture.md flow 5), relay the outbox to NATS JetStream
// or the in-process bus, forget expired Idempotency-Keys, seed the demo data
// (D34). A standby does none of it.

import type { InProcessBus } from '@gpux/shared';

import { seedDemo } from './accounts/demo.js';
import type { DemoTokens } from './accounts/demo.js';
import { releaseClaimsInProgress } from './auth/idempotency.js';
import type { Config } from './config.js';
import type { Database } from './db/database.js';
import { migrate } from './db/migrate.js';
import { BusPublisher } from './events/bus-publisher.js';
import { JetStreamPublisher } from './events/jetstream-publisher.js';
import { OutboxRelay } from './events/outbox-relay.js';
import { AccountEventNumberer } from './account-events/numberer.js';
import type { AccountHead } from './account-events/numberer.js';
import type { SecretBox } from './leases/secret-box.js';
import { WebhookDispatcher } from './webhooks/dispatcher.js';
import type { CommitGroup } from './market/commit-group.js';
import type { EventPublisher } from './events/publisher.js';
import type { Logger } from './logger.js';
import { Market } from './market/market.js';
import type { Fence } from './market/ownership.js';
import { startRetention } from './retention.js';

/** What the process does as the market's owner, and what it found at the start of it. */
export interface Owned {
  /** Migrations applied by this takeover (empty: the schema was up to date). */
  readonly applied: readonly number[];
  /** The newest migration applied to the database (schema_migrations), after this takeover's. */
  readonly schemaVersion: number;
  /** The demo accounts and cluster, when the demo data is on (D34). */
  readonly demo: DemoTokens | undefined;
  readonly market: Market;
  readonly publisher: EventPublisher;
  /** The books' epochs this process writes under (docs/ownership.md). */
  readonly epochs: ReadonlyMap<string, number>;
  /** Stop all of it (the reverse of its start). */
  stop(): Promise<void>;
}

/** What the owned part needs of the process around it. */
export interface OwnedDeps {
  readonly db: Database;
  readonly config: Config;
  readonly logger: Logger;
  /** What the start applied before the ownership table existed; reported by the first takeover. */
  readonly appliedAtStart: number[];
  /** The fence of every write batch (docs/ownership.md). */
  readonly tokenFor: Fence['tokenFor'];
  /** A write batch found the epoch past: the market is lost. */
  readonly fenced: Fence['fenced'];
  /** The market changed these clusters' leases (the agents' service keeps its answers till then). */
  readonly onLeases: (clusters: readonly string[] | 'all') => void;
  /** After every commit group (metrics/exchange-metrics.ts); unset: not measured. */
  readonly onCommit?: NonNullable<CommitGroup['onCommit']>;
  /** After the accounts' events were numbered, their new heads (the streams wake). */
  readonly onNumbered?: (heads: readonly AccountHead[]) => void;
  /** The bus events go to when NATS_URL is unset. */
  readonly bus: InProcessBus | undefined;
  /** Opens the webhooks' signing secrets (webhooks/dispatcher.ts). */
  readonly secrets: SecretBox;
}

/** Starts the owned part under `epochs`; on a failure stops what started and rethrows. */
export async function startOwnedPart(
  d: OwnedDeps,
  epochs: ReadonlyMap<string, number>,
): Promise<Owned> {
  const { db, config, logger, bus } = d;
  const ownedStops: (() => Promise<void>)[] = [];
  const stopOwned = async (): Promise<void> => {
    for (const stop of ownedStops.reverse()) {
      await stop().catch((err: unknown) => {
        logger.error({ err }, 'stopping a part of the market failed');
      });
    }
  };
  try {
    // The first takeover also reports what the start applied.
    const applied = [...d.appliedAtStart.splice(0), ...(await migrate(db))];
    const [schema] = await db.query<{ version: number }>(
      'SELECT max(version)::int AS version FROM schema_migrations',
    );
    // D23: claims left in progress by the last owner committed nothing,
    // and it can commit nothing more (its epoch is past).
    const released = await releaseClaimsInProgress(db);
    if (released > 0)
      logger.warn({ released }, 'released Idempotency-Keys left in progress by the last run');

    // Every book is rebuilt from the database before the first request
    // (docs/architecture.md flow 5).
    const market = await Market.open(db, {
      provisioningTimeoutMs: config.provisioningTimeoutMs,
      logger,
      fence: { tokenFor: d.tokenFor, fenced: d.fenced },
    });
    ownedStops.push(() => market.close());
    market.onLeases(d.onLeases);
    if (d.onCommit !== undefined) market.onCommit(d.onCommit);

    const publisher: EventPublisher =
      bus !== undefined
        ? new BusPublisher(bus)
        : await JetStreamPublisher.connect({
            url: config.natsUrl ?? '',
            credsFile: config.natsCredsFile,
            stream: config.natsStream,
            subjectRoot: config.natsSubjectRoot,
            agentAckWaitMs: config.natsAckWaitMs,
            logger,
          });
    ownedStops.push(() => publisher.close());
    const relay = new OutboxRelay(db, publisher, { logger });
    market.onEvents(() => relay.wake());
    // NATS back (perhaps on an empty store, its stream made again): publish what waits now.
    if (publisher instanceof JetStreamPublisher) publisher.onReconnected(() => relay.wake());
    relay.start();
    ownedStops.push(() => relay.close());
    // Issue 22: the accounts' events, queued by the batches, numbered after their commit
    // (migrations/0023, account-events/numberer.ts).
    const numberer = new AccountEventNumberer(db, {
      logger,
      ...(d.onNumbered === undefined ? {} : { onNumbered: d.onNumbered }),
    });
    market.onAccountEvents(() => numberer.wake());
    numberer.start();
    ownedStops.push(() => numberer.close());
    // Issue 22: the accounts' webhooks, from account_events (docs/api/webhooks.md).
    const webhooks = new WebhookDispatcher(db, d.secrets, {
      development: config.databaseUrl === undefined,
      logger,
    });
    webhooks.start();
    ownedStops.push(() => webhooks.stop());

    const part: Owned = {
      applied,
      schemaVersion: schema?.version ?? 0,
      demo: undefined,
      market,
      publisher,
      epochs,
      stop: stopOwned,
    };
    // D23: keys are kept 24 h; published events GPUX_OUTBOX_RETENTION_HOURS.
    // Forgotten at once and then every hour (retention.ts).
    const stopRetention = startRetention(db, logger, {
      outboxRetentionMs: config.outboxRetentionMs,
      accountEventRetentionMs: config.accountEventRetentionMs,
    });
    ownedStops.push(() => Promise.resolve(stopRetention()));

    // D34: demo data on the embedded database, or on PostgreSQL when asked for.
    const demo = config.databaseUrl === undefined || config.demo ? await seedDemo(db) : undefined;
    logger.info({ epochs: Object.fromEntries(epochs), applied }, 'this process owns the market');
    return { ...part, demo };
  } catch (err) {
    await stopOwned();
    throw err;
  }
}
