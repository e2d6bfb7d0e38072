// Webhook deliveries (docs/api/webhooks.md), run by the market's owner.
// Each round:
// 1. Fan-out: each endpoint whose account has events past its cursor gets
//    one pending delivery per event of its kinds, and its cursor moves, in
//    one transaction: an event is queued exactly once, and everything is in
//    the database, so a restart loses none.
// 2. Sending: each endpoint's oldest pending delivery that is due is POSTed,
//    signed (signature.ts), to the address its URL resolves to now, if that
//    is still allowed (url.ts). A 2xx delivers it, and the endpoint's next
//    one goes at once, up to RUN_PER_ROUND a round; anything else is an
//    attempt recorded with its status or error, retried after a delay that
//    doubles (10 s, 20 s, … at most an hour) until a day after the event,
//    then failed, and the endpoint waits for it. One at a time per
//    endpoint, in order: a receiver gets an account's events in their
//    order, each at least once. Up to PARALLEL endpoints at once.

import { newId } from '@gpux/shared';
import http from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';

import type { Database } from '../db/database.js';
import type { SecretBox } from '../leases/secret-box.js';
import type { Logger } from '../logger.js';
import { SILENT_LOGGER } from '../logger.js';
import { accountEventJson } from '../views/account-events.js';
import type { AccountEventRow } from '../views/account-events.js';
import { openSecret } from './endpoints.js';
import type { EndpointRow } from './endpoints.js';
import { SIGNATURE_HEADER, signature } from './signature.js';
import { resolveAllowed } from './url.js';

export interface DispatcherOptions {
  /** http to localhost allowed (development, url.ts). */
  readonly development: boolean;
  /** The first retry's delay (ms); each next one doubles. */
  readonly retryBaseMs?: number;
  /** The longest delay between attempts (ms). */
  readonly retryMaxMs?: number;
  /** How long after its event a delivery is retried before it fails (ms). */
  readonly retryForMs?: number;
  /** A round every this long (ms). */
  readonly intervalMs?: number;
  /** A delivery's request is abandoned after this long (ms). */
  readonly timeoutMs?: number;
  readonly logger?: Logger;
  readonly now?: () => number;
}

export const RETRY_BASE_MS = 10_000;
export const RETRY_MAX_MS = 3_600_000;
export const RETRY_FOR_MS = 24 * 3_600_000;
const FAN_OUT_PAGE = 500;
/** Deliveries sent at once, over all endpoints. */
const PARALLEL = 16;
/** An endpoint's deliveries sent one after the other in a round, while each is delivered. */
export const RUN_PER_ROUND = 100;

interface Due {
  readonly id: string;
  readonly endpoint_id: string;
  readonly event_id: string;
  readonly payload: string;
  readonly attempts: number;
  readonly created_ms: number;
  readonly url: string;
  readonly secret_sealed: string;
}

interface Outcome {
  readonly statusCode: number | null;
  readonly error: string | null;
}

export class WebhookDispatcher {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private stopped = false;
  private readonly now: () => number;

  constructor(
    private readonly db: Database,
    private readonly box: SecretBox,
    private readonly o: DispatcherOptions,
  ) {
    this.now = o.now ?? Date.now;
  }

  start(): void {
    this.timer = setInterval(() => void this.round(), this.o.intervalMs ?? 1000);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer !== undefined) clearInterval(this.timer);
    await this.running;
  }

  /** One round (no two at once); errors are logged, the next round tries again. */
  round(): Promise<void> {
    if (this.running !== undefined || this.stopped) return this.running ?? Promise.resolve();
    this.running = (async () => {
      try {
        await this.fanOut();
        await this.send();
      } catch (err) {
        (this.o.logger ?? SILENT_LOGGER).warn({ err }, 'webhook round failed; next round retries');
      } finally {
        this.running = undefined;
      }
    })();
    return this.running;
  }

  private async fanOut(): Promise<void> {
    const behind = await this.db.query<{ id: string }>(
      `SELECT e.id FROM webhook_endpoints e
         JOIN account_event_heads h ON h.account_id = e.account_id
        WHERE e.deleted_ms IS NULL AND h.seq > e.cursor_seq`,
    );
    for (const { id } of behind) {
      if (this.stopped) return;
      await this.db.transaction(async (tx) => {
        const [e] = await tx.query<EndpointRow>(
          'SELECT * FROM webhook_endpoints WHERE id = $1 AND deleted_ms IS NULL FOR UPDATE',
          [id],
        );
        if (e === undefined) return;
        const events = await tx.query<AccountEventRow>(
          `SELECT seq, event_id, kind, payload::text AS payload, created_ms FROM account_events
            WHERE account_id = $1 AND seq > $2 ORDER BY seq LIMIT ${FAN_OUT_PAGE}`,
          [e.account_id, e.cursor_seq],
        );
        const last = events[events.length - 1];
        if (last === undefined) return;
        const now = this.now();
        const rows = events
          .filter((ev) => e.kinds.includes(ev.kind))
          .map((ev) => ({
            id: newId('whd_'),
            endpoint_id: e.id,
            seq: ev.seq,
            event_id: ev.event_id,
            kind: ev.kind,
            payload: JSON.parse(accountEventJson(ev)) as unknown,
            next_attempt_ms: now,
            created_ms: now,
          }));
        if (rows.length > 0) {
          await tx.query(
            `INSERT INTO webhook_deliveries (id, endpoint_id, seq, event_id, kind, payload, status,
                                             next_attempt_ms, created_ms)
             SELECT id, endpoint_id, seq, event_id, kind, payload, 'pending', next_attempt_ms, created_ms
               FROM json_to_recordset($1::json) AS x(id text, endpoint_id text, seq bigint,
                    event_id text, kind text, payload json, next_attempt_ms bigint, created_ms bigint)`,
            [JSON.stringify(rows)],
          );
        }
        await tx.query('UPDATE webhook_endpoints SET cursor_seq = $2 WHERE id = $1', [
          e.id,
          last.seq,
        ]);
      });
    }
  }

  /** Each endpoint's oldest pending delivery that is due; or only `endpointId`'s. */
  private due(now: number, endpointId?: string): Promise<Due[]> {
    // Ids sort in creation order.
    return this.db.query<Due>(
      `SELECT * FROM (
         SELECT DISTINCT ON (d.endpoint_id) d.id, d.endpoint_id, d.event_id,
                d.payload::text AS payload, d.attempts, d.created_ms, d.next_attempt_ms,
                e.url, e.secret_sealed
           FROM webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id
          WHERE d.status = 'pending' AND e.deleted_ms IS NULL
                ${endpointId === undefined ? '' : 'AND d.endpoint_id = $2'}
          ORDER BY d.endpoint_id, d.created_ms, d.id) head
        WHERE head.next_attempt_ms <= $1`,
      endpointId === undefined ? [now] : [now, endpointId],
    );
  }

  private async send(): Promise<void> {
    const heads = await this.due(this.now());
    // PARALLEL workers, each taking the next endpoint and sending its run.
    const worker = async (): Promise<void> => {
      for (let d = heads.shift(); d !== undefined && !this.stopped; d = heads.shift()) {
        await this.run(d);
      }
    };
    await Promise.all(Array.from({ length: Math.min(PARALLEL, heads.length) }, worker));
  }

  /** `first`, then the endpoint's next due deliveries while each is delivered (RUN_PER_ROUND at most). */
  private async run(first: Due): Promise<void> {
    let d: Due | undefined = first;
    for (let n = 0; d !== undefined && n < RUN_PER_ROUND && !this.stopped; n++) {
      if (!(await this.deliver(d))) return;
      [d] = await this.due(this.now(), d.endpoint_id);
    }
  }

  /** One attempt at `d`, recorded; true when it was delivered. */
  private async deliver(d: Due): Promise<boolean> {
    const started = this.now();
    const t0 = performance.now();
    let outcome: Outcome;
    try {
      const secret = openSecret(this.box, { id: d.endpoint_id, secret_sealed: d.secret_sealed });
      outcome = await this.post(d, secret);
    } catch (err) {
      outcome = { statusCode: null, error: (err as Error).message.slice(0, 500) };
    }
    const took = Math.round(performance.now() - t0);
    const attempt = d.attempts + 1;
    const ok = outcome.statusCode !== null && outcome.statusCode >= 200 && outcome.statusCode < 300;
    const at = this.now();
    const delay = Math.min(
      (this.o.retryBaseMs ?? RETRY_BASE_MS) * 2 ** (attempt - 1),
      this.o.retryMaxMs ?? RETRY_MAX_MS,
    );
    const giveUp = !ok && at + delay > d.created_ms + (this.o.retryForMs ?? RETRY_FOR_MS);
    const status = ok ? 'delivered' : giveUp ? 'failed' : 'pending';
    await this.db.query(
      `WITH a AS (
         INSERT INTO webhook_attempts (delivery_id, attempt, at_ms, status_code, error, duration_ms)
         VALUES ($1, $2, $3, $4, $5, $6))
       UPDATE webhook_deliveries SET attempts = $2, status = $7,
              next_attempt_ms = $8, finished_ms = $9
        WHERE id = $1 AND status = 'pending'`,
      [
        d.id,
        attempt,
        started,
        outcome.statusCode,
        ok ? null : (outcome.error ?? `HTTP ${outcome.statusCode ?? ''}`),
        took,
        status,
        status === 'pending' ? at + delay : null,
        status === 'pending' ? null : at,
      ],
    );
    return ok;
  }

  /** POSTs the delivery to the address its URL resolves to now (checked, url.ts). */
  private async post(d: Due, secret: string): Promise<Outcome> {
    const target = await resolveAllowed(d.url, this.o.development);
    const lookup: LookupFunction = (_host, options, callback) => {
      if (options.all === true) {
        (callback as (e: null, a: { address: string; family: number }[]) => void)(null, [target]);
      } else callback(null, target.address, target.family);
    };
    const t = Math.floor(Date.now() / 1000);
    const body = d.payload;
    const u = new URL(d.url);
    const client = u.protocol === 'https:' ? https : http;
    return new Promise<Outcome>((resolve) => {
      const req = client.request(
        u,
        {
          method: 'POST',
          lookup,
          timeout: this.o.timeoutMs ?? 10_000,
          headers: {
            'content-type': 'application/json',
            'content-length': Buffer.byteLength(body),
            'user-agent': 'gpux-webhooks/1',
            [SIGNATURE_HEADER]: signature(secret, body, t),
            'gpux-event-id': d.event_id,
            'gpux-delivery-id': d.id,
          },
        },
        (res) => {
          // The answer's body is not read beyond this: only its status counts.
          res.resume();
          res.on('end', () => resolve({ statusCode: res.statusCode ?? 0, error: null }));
          res.on('error', () => resolve({ statusCode: res.statusCode ?? 0, error: null }));
        },
      );
      req.on('timeout', () => req.destroy(new Error('no answer within the timeout')));
      req.on('error', (err) => resolve({ statusCode: null, error: err.message }));
      req.end(body);
    });
  }
}
