// An account's webhook endpoints and their deliveries, as stored
// (migrations/0020, docs/api/webhooks.md). The secret is sealed with the
// exchange's key (leases/secret-box.ts, bound to the endpoint's id) and
// shown once, in the answer to its registration.

import { GpuxError, fieldError, newId } from '@gpux/shared';

import type { Queryable } from '../db/database.js';
import type { SecretBox } from '../leases/secret-box.js';
import { newSecret } from './signature.js';
import { resolveAllowed, urlProblem } from './url.js';

/** Endpoints one account may have registered at once. */
export const MAX_ENDPOINTS = 10;

export interface EndpointRow {
  readonly id: string;
  readonly account_id: string;
  readonly url: string;
  readonly kinds: string[];
  readonly secret_sealed: string;
  readonly created_ms: number;
  readonly cursor_seq: number;
}

export interface AttemptRow {
  readonly attempt: number;
  readonly at_ms: number;
  readonly status_code: number | null;
  readonly error: string | null;
  readonly duration_ms: number;
}

export interface DeliveryRow {
  readonly id: string;
  readonly endpoint_id: string;
  readonly seq: number | null;
  readonly event_id: string;
  readonly kind: string;
  readonly status: 'pending' | 'delivered' | 'failed';
  readonly attempts: number;
  readonly next_attempt_ms: number | null;
  readonly created_ms: number;
  readonly finished_ms: number | null;
  readonly tries: AttemptRow[];
}

export function sealSecret(box: SecretBox, secret: string, endpointId: string): string {
  return box.seal(secret, endpointId).toString('base64');
}

export function openSecret(box: SecretBox, row: Pick<EndpointRow, 'id' | 'secret_sealed'>): string {
  return box.open(Buffer.from(row.secret_sealed, 'base64'), row.id);
}

/** Refused unless `url` may be a webhook's (url.ts); invalid_request naming `url`. */
export async function checkUrl(url: string, development: boolean): Promise<void> {
  const problem = urlProblem(url, development);
  if (problem !== undefined) throw fieldError('url', 'invalid', problem);
  try {
    await resolveAllowed(url, development);
  } catch (err) {
    throw fieldError('url', 'invalid', `url refused: ${(err as Error).message}`);
  }
}

/** Registers an endpoint; its first events are the account's next. Returns it and its secret. */
export async function createEndpoint(
  db: Queryable,
  box: SecretBox,
  accountId: string,
  url: string,
  kinds: readonly string[],
  now: number,
): Promise<{ row: EndpointRow; secret: string }> {
  const id = newId('whk_');
  const secret = newSecret();
  const [row] = await db.query<EndpointRow>(
    `INSERT INTO webhook_endpoints (id, account_id, url, kinds, secret_sealed, created_ms, cursor_seq)
     SELECT $1, $2, $3, $4, $5, $6,
            COALESCE((SELECT seq FROM account_event_heads WHERE account_id = $2), 0)
      WHERE (SELECT count(*) FROM webhook_endpoints
              WHERE account_id = $2 AND deleted_ms IS NULL) < ${MAX_ENDPOINTS}
     RETURNING *`,
    [id, accountId, url, kinds, sealSecret(box, secret, id), now],
  );
  if (row === undefined) {
    throw new GpuxError(
      'invalid_request',
      `an account may have at most ${MAX_ENDPOINTS} webhooks; delete one first`,
    );
  }
  return { row, secret };
}

export async function listEndpoints(db: Queryable, accountId: string): Promise<EndpointRow[]> {
  return db.query<EndpointRow>(
    `SELECT * FROM webhook_endpoints WHERE account_id = $1 AND deleted_ms IS NULL
      ORDER BY created_ms DESC, id DESC`,
    [accountId],
  );
}

/** The account's endpoint, or not_found (another account's is not found either). */
export async function endpointOf(
  db: Queryable,
  accountId: string,
  id: string,
): Promise<EndpointRow> {
  const [row] = await db.query<EndpointRow>(
    'SELECT * FROM webhook_endpoints WHERE id = $1 AND account_id = $2 AND deleted_ms IS NULL',
    [id, accountId],
  );
  if (row === undefined) throw new GpuxError('not_found', `no webhook ${id}`);
  return row;
}

/** Deletes the endpoint: nothing more is sent to it, its pending deliveries fail. */
export async function deleteEndpoint(
  db: Queryable,
  accountId: string,
  id: string,
  now: number,
): Promise<void> {
  const gone = await db.query(
    `UPDATE webhook_endpoints SET deleted_ms = $3
      WHERE id = $1 AND account_id = $2 AND deleted_ms IS NULL RETURNING id`,
    [id, accountId, now],
  );
  if (gone.length === 0) throw new GpuxError('not_found', `no webhook ${id}`);
  // The dispatcher sends nothing to a deleted endpoint; its queue is closed as failed.
  await db.query(
    `UPDATE webhook_deliveries SET status = 'failed', finished_ms = $2, next_attempt_ms = NULL
      WHERE endpoint_id = $1 AND status = 'pending'`,
    [id, now],
  );
}

/** A test delivery (webhook.test), queued like any other. */
export async function queueTest(
  db: Queryable,
  endpoint: EndpointRow,
  now: number,
): Promise<string> {
  const id = newId('whd_');
  const eventId = newId('evt_');
  const body = {
    id: eventId,
    seq: null,
    type: 'webhook.test',
    created_at: new Date(now).toISOString(),
    data: { webhook_id: endpoint.id },
  };
  await db.query(
    `INSERT INTO webhook_deliveries (id, endpoint_id, seq, event_id, kind, payload, status,
                                     next_attempt_ms, created_ms)
     VALUES ($1, $2, NULL, $3, 'webhook.test', $4, 'pending', $5, $5)`,
    [id, endpoint.id, eventId, JSON.stringify(body), now],
  );
  return id;
}

/** The endpoint's deliveries, newest first, each with its attempts. */
export async function deliveriesOf(
  db: Queryable,
  endpointId: string,
  limit: number,
  offset: number,
): Promise<{ rows: DeliveryRow[]; total: number }> {
  const rows = await db.query<DeliveryRow>(
    `SELECT d.id, d.endpoint_id, d.seq, d.event_id, d.kind, d.status, d.attempts,
            d.next_attempt_ms, d.created_ms, d.finished_ms,
            COALESCE((SELECT json_agg(a ORDER BY a.attempt) FROM (
               SELECT attempt, at_ms, status_code, error, duration_ms
                 FROM webhook_attempts WHERE delivery_id = d.id) a), '[]'::json) AS tries
       FROM webhook_deliveries d WHERE d.endpoint_id = $1
      ORDER BY d.created_ms DESC, d.seq DESC NULLS LAST, d.id DESC LIMIT $2 OFFSET $3`,
    [endpointId, limit, offset],
  );
  const [count] = await db.query<{ n: number }>(
    'SELECT count(*)::bigint AS n FROM webhook_deliveries WHERE endpoint_id = $1',
    [endpointId],
  );
  return { rows, total: count?.n ?? 0 };
}
