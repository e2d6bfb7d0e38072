// What /metrics reads when it is scraped (docs/metrics.md): the books from
// memory, the rest from a few aggregate queries on indexed, small sets (live
// leases, unpublished outbox rows, account events not yet numbered, nodes). Nothing here runs on the order path.

import type { Database } from '../db/database.js';
import type { Market } from '../market/market.js';
import type { ExchangeMetrics } from './exchange-metrics.js';

/** What a scrape reads. */
export interface MetricsSource {
  readonly db: Database;
  /** The market when this process owns it; undefined on a standby. */
  market(): Market | undefined;
  /** D25: a lease still provisioning this long after its start fails. */
  readonly provisioningTimeoutMs: number;
  /** Live feed streams open: all of them, and those handed to the feed writer process. */
  readonly feedStreams?: () => { readonly open: number; readonly handedOver: number };
}

/** Every resting GPU on a side, not only the top levels the API shows. */
const ALL_LEVELS = Number.MAX_SAFE_INTEGER;

/** Brings the gauges and the books' counters up to now; then the registry is read. */
export async function refresh(m: ExchangeMetrics, source: MetricsSource): Promise<void> {
  const market = source.market();
  m.owner.set(market === undefined ? 0 : 1);
  const streams = source.feedStreams?.();
  if (streams !== undefined) {
    m.feedStreams.set({ written_by: 'writer' }, streams.handedOver);
    m.feedStreams.set({ written_by: 'exchange' }, Math.max(0, streams.open - streams.handedOver));
  }
  if (market === undefined) return;
  readBooks(m, market);
  await readDatabase(m, source.db, market.clock.now(), source.provisioningTimeoutMs);
}

function readBooks(m: ExchangeMetrics, market: Market): void {
  m.orders.reset();
  m.cancels.reset();
  m.fills.reset();
  m.spread.reset();
  for (const w of market.books) {
    const s = w.view;
    const book = { gpu_type: s.gpuType, zone: s.zone };
    m.orders.inc(book, s.tally.placed);
    m.cancels.inc(book, s.tally.cancelled);
    m.fills.inc(book, s.fillSeq);
    m.halted.set(book, s.haltedAt === null ? 0 : 1);
    const snap = s.book.snapshot(ALL_LEVELS);
    m.depth.set({ ...book, side: 'bid' }, sum(snap.bids));
    m.depth.set({ ...book, side: 'ask' }, sum(snap.asks));
    if (snap.spread !== null) m.spread.set(book, snap.spread);
  }
}

function sum(levels: readonly { readonly gpus: number }[]): number {
  let n = 0;
  for (const l of levels) n += l.gpus;
  return n;
}

const seconds = (ms: number): number => Math.max(0, ms) / 1000;

async function readDatabase(
  m: ExchangeMetrics,
  db: Database,
  now: number,
  timeoutMs: number,
): Promise<void> {
  const [leases, revocations, outbox, accountEvents, nodes, heartbeats] = await Promise.all([
    // leases_live is a partial index on exactly these two states.
    db.query<{ status: string; n: string; oldest: string | null }>(
      `SELECT status, count(*) AS n,
              min(start_ms) FILTER (WHERE status = 'provisioning' AND start_ms <= $1) AS oldest
         FROM leases WHERE status IN ('provisioning', 'active') GROUP BY status`,
      [now],
    ),
    // An ended lease whose access an agent reported and has not confirmed
    // removed (D26: lease_access.revoked_ms, providers/provider-leases.ts).
    db.query<{ n: string; oldest: string | null }>(
      `SELECT count(*) AS n, min(l.ended_ms) AS oldest
         FROM lease_access a JOIN leases l ON l.id = a.lease_id
        WHERE a.revoked_ms IS NULL AND l.ended_ms IS NOT NULL`,
    ),
    db.query<{ n: string; oldest: string | null }>(
      'SELECT count(*) AS n, min(created_ms) AS oldest FROM outbox WHERE published_ms IS NULL',
    ),
    // The numberer's queue (D35, account-events/numberer.ts): the oldest is the lowest id.
    db.query<{ n: string; oldest: string | null }>(
      `SELECT count(*) AS n,
              (SELECT (events->0->>'created_ms')::bigint FROM account_event_batches
                ORDER BY id LIMIT 1) AS oldest
         FROM account_event_batches`,
    ),
    db.query<{ status: string; n: string }>(
      'SELECT status, count(*) AS n FROM nodes GROUP BY status',
    ),
    db.query<{ cluster_id: string; last_ms: string }>(
      `SELECT n.cluster_id, (extract(epoch FROM max(n.last_heartbeat_at)) * 1000)::bigint AS last_ms
         FROM nodes n GROUP BY n.cluster_id HAVING max(n.last_heartbeat_at) IS NOT NULL`,
    ),
  ]);

  m.leases.set({ state: 'provisioning' }, 0);
  m.leases.set({ state: 'active' }, 0);
  let oldestProvisioning: number | null = null;
  for (const r of leases) {
    m.leases.set({ state: r.status }, Number(r.n));
    if (r.oldest !== null) oldestProvisioning = Number(r.oldest);
  }
  const age = oldestProvisioning === null ? 0 : seconds(now - oldestProvisioning);
  m.provisioningOldest.set(age);
  m.provisioningRatio.set(timeoutMs > 0 ? (age * 1000) / timeoutMs : 0);

  const rev = revocations[0];
  m.unconfirmedRevocations.set(Number(rev?.n ?? 0));
  m.oldestUnconfirmed.set(rev?.oldest == null ? 0 : seconds(now - Number(rev.oldest)));

  const out = outbox[0];
  m.outboxBacklog.set(Number(out?.n ?? 0));
  m.outboxLag.set(out?.oldest == null ? 0 : seconds(now - Number(out.oldest)));

  const queued = accountEvents[0];
  m.accountEventQueue.set(Number(queued?.n ?? 0));
  m.accountEventQueueAge.set(queued?.oldest == null ? 0 : seconds(now - Number(queued.oldest)));

  for (const status of ['available', 'online', 'offline']) m.nodes.set({ status }, 0);
  for (const r of nodes) m.nodes.set({ status: r.status }, Number(r.n));

  m.heartbeatAge.reset();
  for (const r of heartbeats) {
    m.heartbeatAge.set({ cluster_id: r.cluster_id }, seconds(now - Number(r.last_ms)));
  }
}
