// D23: `Idempotency-Key` on POST and DELETE, kept 24 h per account in
// PostgreSQL. The same key with the same request replays the first answer
// (status and body); with a different request it is idempotency_key_reused
// (422); while the first is still running, idempotency_key_in_progress (409).
//
// The key is claimed with one INSERT before the handler runs, so two
// concurrent requests with one key cannot both run. A request that changes
// a book (orders, cancels, terminations, resales) writes its answer in the
// same statement as its effect (ClaimCompletion below, change-set.ts): the
// effect and the answer are committed together or not at all. A claim still
// in progress when the process that owned the market stopped (or lost it)
// therefore committed nothing, and the next owner releases every such claim
// when it takes the market (releaseClaimsInProgress, docs/ownership.md: no
// other process can be running a request then), so a client's retry runs
// exactly once. Answers of 5xx are not kept: the request did not happen, a
// retry may run. A claim names its process (GPUX_INSTANCE_ID), for people.

import { createHash } from 'node:crypto';

import { GpuxError } from '@gpux/shared';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';

import type { Queryable } from '../db/database.js';
import type { AfterCommand } from '../market/book-writer.js';

export const IDEMPOTENCY_TTL_MS = 24 * 3_600_000;
const KEY = /^[\x21-\x7e]{1,255}$/;

declare module 'fastify' {
  interface FastifyRequest {
    /**
     * Set when this request claimed an Idempotency-Key; `claimedMs` is the
     * claim's created_ms, which names this claim and no later one of the key.
     */
    idempotency: { accountId: string; key: string; claimedMs: number } | null;
  }
}

/** Our bodies are flat; a deeper one is refused rather than walked without bound. */
const MAX_DEPTH = 32;

/** JSON with object keys sorted, so the same body in another key order is the same request. */
function canonical(x: unknown, depth = 0): string {
  if (depth > MAX_DEPTH) {
    throw new GpuxError(
      'invalid_request',
      `the request body nests deeper than ${MAX_DEPTH} levels`,
    );
  }
  if (Array.isArray(x)) return `[${x.map((v) => canonical(v, depth + 1)).join(',')}]`;
  if (x !== null && typeof x === 'object') {
    const entries = Object.entries(x as Record<string, unknown>).sort(([a], [b]) =>
      a < b ? -1 : a > b ? 1 : 0,
    );
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v, depth + 1)}`).join(',')}}`;
  }
  return JSON.stringify(x) ?? 'null';
}

function requestHash(request: FastifyRequest): Buffer {
  return createHash('sha256')
    .update(`${request.method} ${request.url}\n${canonical(request.body ?? null)}`)
    .digest();
}

interface KeyRow {
  request_hash: Buffer | Uint8Array;
  status_code: number | null;
  response_body: string | null;
  created_ms: number;
}

/** The exchange process a claim belongs to when none is configured (one process). */
export const DEFAULT_INSTANCE_ID = 'exchange';

function replay(reply: FastifyReply, status: number, row: KeyRow): FastifyReply {
  void reply
    .code(status)
    .header('content-type', 'application/json; charset=utf-8')
    .header('idempotent-replayed', 'true')
    .send(row.response_body ?? '');
  return reply;
}

export function idempotency(
  app: FastifyInstance,
  db: Queryable,
  now: () => number,
  instanceId: string = DEFAULT_INSTANCE_ID,
): void {
  app.decorateRequest('idempotency', null);

  app.addHook('preHandler', async (request: FastifyRequest, reply: FastifyReply) => {
    if (request.method !== 'POST' && request.method !== 'DELETE') return;
    const raw = request.headers['idempotency-key'];
    if (raw === undefined || request.principal === null) return;
    const key = Array.isArray(raw) ? raw[0] : raw;
    if (key === undefined || !KEY.test(key)) {
      throw new GpuxError(
        'invalid_request',
        'Idempotency-Key must be 1 to 255 printable characters',
      );
    }
    const accountId = request.principal.accountId;
    const hash = requestHash(request);
    const t = now();
    if (request.rateSlot?.refused === true) {
      // Past the rate limit (D18): only a replay is answered; nothing is claimed.
      const [row] = await db.query<KeyRow>(
        'SELECT request_hash, status_code, response_body, created_ms FROM idempotency_keys WHERE account_id = $1 AND key = $2',
        [accountId, key],
      );
      const status = row?.status_code ?? null;
      const replayable =
        row !== undefined &&
        status !== null &&
        row.created_ms > t - IDEMPOTENCY_TTL_MS &&
        Buffer.from(row.request_hash).equals(hash);
      if (!replayable) return request.rateSlot.refuse();
      return replay(reply, status, row);
    }
    const claimed = await db.query(
      `INSERT INTO idempotency_keys (account_id, key, request_hash, created_ms, instance_id)
       VALUES ($1, $2, $3, $4, $5) ON CONFLICT (account_id, key) DO NOTHING RETURNING 1`,
      [accountId, key, hash, t, instanceId],
    );
    if (claimed.length === 0) {
      const [row] = await db.query<KeyRow>(
        'SELECT request_hash, status_code, response_body, created_ms FROM idempotency_keys WHERE account_id = $1 AND key = $2',
        [accountId, key],
      );
      const expired = row === undefined || row.created_ms <= t - IDEMPOTENCY_TTL_MS;
      if (!expired) {
        if (!Buffer.from(row.request_hash).equals(hash)) {
          throw new GpuxError(
            'idempotency_key_reused',
            'this Idempotency-Key was first used with a different request',
          );
        }
        if (row.status_code === null) {
          throw new GpuxError(
            'idempotency_key_in_progress',
            'a request with this Idempotency-Key is still running; retry shortly',
          );
        }
        // D18: a replay is not an order creation; its rate slot comes back.
        request.rateSlot?.release();
        return replay(reply, row.status_code, row);
      }
      // Past its 24 h: claim it anew, unless someone else just did.
      const retaken = await db.query(
        `UPDATE idempotency_keys SET request_hash = $3, status_code = NULL, response_body = NULL,
                created_ms = $4, instance_id = $6
          WHERE account_id = $1 AND key = $2 AND created_ms = $5 RETURNING 1`,
        [accountId, key, hash, t, row?.created_ms ?? -1, instanceId],
      );
      if (retaken.length === 0) {
        throw new GpuxError(
          'idempotency_key_in_progress',
          'a request with this Idempotency-Key is still running; retry shortly',
        );
      }
    }
    request.idempotency = { accountId, key, claimedMs: t };
  });

  app.addHook('onSend', async (request: FastifyRequest, reply: FastifyReply, payload: unknown) => {
    const claim = request.idempotency;
    if (claim === null) return payload;
    request.idempotency = null;
    if (reply.statusCode >= 500) {
      // Unless the effect and its answer were committed together (then the
      // answer stands and a retry replays it).
      // Only this request's own claim: after a takeover (docs/ownership.md)
      // the key may have been released and claimed again by a retry.
      await db.query(
        'DELETE FROM idempotency_keys WHERE account_id = $1 AND key = $2 AND created_ms = $3 AND status_code IS NULL',
        [claim.accountId, claim.key, claim.claimedMs],
      );
      return payload;
    }
    await db.query(
      'UPDATE idempotency_keys SET status_code = $3, response_body = $4 WHERE account_id = $1 AND key = $2 AND created_ms = $5',
      [
        claim.accountId,
        claim.key,
        reply.statusCode,
        typeof payload === 'string' ? payload : String(payload),
        claim.claimedMs,
      ],
    );
    return payload;
  });
}

/** Forget keys past their 24 h (D23). */
export async function purgeIdempotencyKeys(db: Queryable, now: number): Promise<number> {
  const [gone] = await db.query<{ n: number }>(
    `WITH gone AS (DELETE FROM idempotency_keys WHERE created_ms <= $1 RETURNING 1)
     SELECT count(*)::int AS n FROM gone`,
    [now - IDEMPOTENCY_TTL_MS],
  );
  return gone?.n ?? 0;
}

/**
 * Every claim in progress (see the top of this file): call when this process
 * takes the market, before it serves. The process that owned the market
 * before can commit nothing more (its epoch is past), whatever its
 * GPUX_INSTANCE_ID, and no other process serves requests.
 */
export async function releaseClaimsInProgress(db: Queryable): Promise<number> {
  const rows = await db.query('DELETE FROM idempotency_keys WHERE status_code IS NULL RETURNING 1');
  return rows.length;
}

/**
 * For a request that claimed an Idempotency-Key: a completion that puts the
 * answer `answer(outcome)` (status and body; undefined for a refusal, which
 * changed nothing and is recorded when it is sent) into the command's batch.
 * Undefined when the request has no claim.
 */
export function claimCompletion<T>(
  request: FastifyRequest,
  answer: (outcome: T) => { status: number; body: unknown } | undefined,
): AfterCommand<T> | undefined {
  const claim = request.idempotency;
  if (claim === null) return undefined;
  return (outcome, changes) => {
    const a = answer(outcome);
    if (a === undefined) return;
    changes.answers.push({
      account_id: claim.accountId,
      key: claim.key,
      created_ms: claim.claimedMs,
      status_code: a.status,
      response_body: JSON.stringify(a.body),
    });
  };
}
