// Keeps the agent within the exchange's per-provider limits by itself
// (issue 18), around any ExchangeApi, so every part of the agent gets it:
//
// • A RESOURCE_EXHAUSTED with `retry-after-ms` holds back every later call of
//   the same kind (CallKind: the exchange limits heartbeats, sell changes and
//   reports apart, so a report limit never delays the heartbeats that keep the
//   nodes online) until that time. A call that would wait longer than
//   maxWaitMs (the call deadline) is not sent: it fails at once as the same
//   RESOURCE_EXHAUSTED and its caller's own schedule tries later (the next
//   heartbeat, the event's redelivery, the next reconciliation).
// • Heartbeats leave at least HEARTBEAT_GAP of the declared interval apart
//   (the exchange allows two per interval; ticker.ts keeps nudged runs that
//   far apart too, this holds it at the moment of sending).
// • At most maxInFlight calls at once (the exchange bounds calls in flight
//   per provider); the others wait their turn.
// • A request refused as is (isRefusedAsIs: invalid, too large, or naming
//   what the exchange does not have) is never sent again unchanged: the same
//   request is answered from memory, marked `repeated` so that callers log a
//   refusal once; the refusals are in status() for status.json.

import { createHash } from 'node:crypto';

import { status } from '@grpc/grpc-js';
import type {
  AttachRequest,
  AttachResponse,
  HeartbeatRequest,
  HeartbeatResponse,
  ListLeasesResponse,
  ListSellsResponse,
  PublishSellRequest,
  PublishSellResponse,
  ReportProvisionedRequest,
  ReportResponse,
  WithdrawSellResponse,
} from '@gpux/proto';

import { ExchangeError, isRefusedAsIs } from './exchange-client.js';
import type { ExchangeApi } from './exchange-client.js';

/** What one retry-after holds back: the calls the exchange counts together (agent-share.ts). */
export type CallKind = 'heartbeat' | 'reads' | 'sells' | 'reports';

/**
 * Heartbeats leave at least this share of the declared interval apart. The
 * exchange counts two per interval over a sliding window of the times they
 * reach it: at exactly half, any three in a row span exactly one interval,
 * and a first one that took longer to get there than the third would be
 * refused. A tenth of an interval to spare covers that.
 */
export const HEARTBEAT_GAP = 0.6;
/** Calls one agent has at the exchange at once, at most (the exchange bounds them per provider). */
export const DEFAULT_MAX_IN_FLIGHT = 4;
/** A retry-after longer than this is taken as this: a wrong trailer must not silence the agent. */
export const MAX_HONOURED_WAIT_MS = 10 * 60_000;
/** Refused requests remembered per method (their digests); the oldest go first. */
const REMEMBERED_PER_METHOD = 64;
/** Distinct refusals kept for the status. */
const REFUSALS_SHOWN = 10;

export interface PacedExchangeOptions {
  /** The interval the agent declares at Attach; heartbeats leave HEARTBEAT_GAP of it apart. */
  readonly heartbeatIntervalMs: number;
  /** A call held back longer than this fails at once instead of waiting (the call deadline). */
  readonly maxWaitMs: number;
  readonly maxInFlight?: number;
  readonly now?: () => number;
  readonly sleep?: (ms: number) => Promise<void>;
}

export interface RefusalSeen {
  readonly method: string;
  /** The gRPC code's name. */
  readonly code: string;
  /** The exchange's message. */
  readonly message: string;
  readonly firstAtMs: number;
  readonly lastAtMs: number;
  /** Refused this often: by the exchange, or from memory without sending. */
  readonly times: number;
}

export interface ExchangePacingStatus {
  /** Kinds of call held back at the exchange's request, until when. */
  readonly backoff: readonly { readonly kind: CallKind; readonly untilMs: number }[];
  /** Requests refused as is, not sent again unchanged (newest last). */
  readonly refused: readonly RefusalSeen[];
}

const sleepMs = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

function digest(method: string, request: unknown): string {
  return createHash('sha256')
    .update(method)
    .update('\0')
    .update(JSON.stringify(request) ?? '')
    .digest('base64');
}

export class PacedExchange implements ExchangeApi {
  private readonly notBefore = new Map<CallKind, number>();
  /** When the last heartbeat left (or is booked to leave). */
  private heartbeatAtMs: number | undefined;
  private inFlight = 0;
  private readonly waiting: (() => void)[] = [];
  private readonly refusedRequests = new Map<string, Map<string, ExchangeError>>();
  private readonly refusals = new Map<string, RefusalSeen>();
  private readonly now: () => number;
  private readonly sleep: (ms: number) => Promise<void>;
  private readonly maxInFlight: number;
  private closed = false;

  constructor(
    private readonly inner: ExchangeApi,
    private readonly o: PacedExchangeOptions,
  ) {
    this.now = o.now ?? Date.now;
    this.sleep = o.sleep ?? sleepMs;
    this.maxInFlight = Math.max(1, o.maxInFlight ?? DEFAULT_MAX_IN_FLIGHT);
  }

  status(): ExchangePacingStatus {
    const now = this.now();
    return {
      backoff: [...this.notBefore]
        .filter(([, until]) => until > now)
        .map(([kind, untilMs]) => ({ kind, untilMs })),
      refused: [...this.refusals.values()],
    };
  }

  attach(req: AttachRequest): Promise<AttachResponse> {
    return this.call('Attach', 'reads', req, () => this.inner.attach(req));
  }

  heartbeat(req: HeartbeatRequest): Promise<HeartbeatResponse> {
    return this.call('Heartbeat', 'heartbeat', req, () => this.inner.heartbeat(req));
  }

  listSells(clusterId: string): Promise<ListSellsResponse> {
    return this.call('ListSells', 'reads', { clusterId }, () => this.inner.listSells(clusterId));
  }

  publishSell(req: PublishSellRequest): Promise<PublishSellResponse> {
    return this.call('PublishSell', 'sells', req, () => this.inner.publishSell(req));
  }

  withdrawSell(clusterId: string, orderId: string): Promise<WithdrawSellResponse> {
    return this.call('WithdrawSell', 'sells', { clusterId, orderId }, () =>
      this.inner.withdrawSell(clusterId, orderId),
    );
  }

  listLeases(clusterId: string): Promise<ListLeasesResponse> {
    return this.call('ListLeases', 'reads', { clusterId }, () => this.inner.listLeases(clusterId));
  }

  reportProvisioned(req: ReportProvisionedRequest): Promise<ReportResponse> {
    return this.call('ReportProvisioned', 'reports', req, () => this.inner.reportProvisioned(req));
  }

  reportRevoked(clusterId: string, leaseId: string): Promise<ReportResponse> {
    return this.call('ReportRevoked', 'reports', { clusterId, leaseId }, () =>
      this.inner.reportRevoked(clusterId, leaseId),
    );
  }

  reportFailed(clusterId: string, leaseId: string, reason: string): Promise<ReportResponse> {
    return this.call('ReportFailed', 'reports', { clusterId, leaseId, reason }, () =>
      this.inner.reportFailed(clusterId, leaseId, reason),
    );
  }

  close(): void {
    this.closed = true;
    this.inner.close();
  }

  private async call<Res>(
    method: string,
    kind: CallKind,
    request: unknown,
    send: () => Promise<Res>,
  ): Promise<Res> {
    if (this.closed) throw new ExchangeError(method, status.CANCELLED, 'the agent is stopping');
    // Digested only once something of this method was refused (a heartbeat can be large).
    const remembered = this.refusedRequests.get(method);
    const key = remembered === undefined ? undefined : digest(method, request);
    const known = key === undefined ? undefined : remembered?.get(key);
    if (known !== undefined) {
      this.seen(known);
      throw new ExchangeError(method, known.code, known.details, {
        cause: known,
        repeated: true,
      });
    }
    await this.holdBack(method, kind);
    await this.turn();
    try {
      return await send();
    } catch (err) {
      throw this.learn(method, kind, request, key, err);
    } finally {
      this.done();
    }
  }

  /** Waits for the kind's retry-after (or fails at once when too far) and the heartbeat spacing. */
  private async holdBack(method: string, kind: CallKind): Promise<void> {
    const now = this.now();
    const until = this.notBefore.get(kind) ?? 0;
    if (until - now > this.o.maxWaitMs) {
      const left = until - now;
      throw new ExchangeError(
        method,
        status.RESOURCE_EXHAUSTED,
        `not sent: the exchange asked for no ${kind} call for ${left} ms more`,
        { retryAfterMs: left },
      );
    }
    let at = Math.max(now, until);
    if (kind === 'heartbeat') {
      if (this.heartbeatAtMs !== undefined) {
        at = Math.max(at, this.heartbeatAtMs + this.o.heartbeatIntervalMs * HEARTBEAT_GAP);
      }
      // Booked now, so a second heartbeat waiting at the same time leaves after it.
      this.heartbeatAtMs = at;
    }
    if (at > now) await this.sleep(at - now);
  }

  private async turn(): Promise<void> {
    if (this.inFlight < this.maxInFlight) {
      this.inFlight++;
      return;
    }
    // The slot is handed over by done(): inFlight stays counted.
    await new Promise<void>((resolve) => this.waiting.push(resolve));
  }

  private done(): void {
    const next = this.waiting.shift();
    if (next !== undefined) next();
    else this.inFlight--;
  }

  /** What an error teaches: a time to wait, or a request not to send again. */
  private learn(
    method: string,
    kind: CallKind,
    request: unknown,
    key: string | undefined,
    err: unknown,
  ): unknown {
    if (!(err instanceof ExchangeError)) return err;
    if (err.code === status.RESOURCE_EXHAUSTED && err.retryAfterMs !== undefined) {
      const until = this.now() + Math.min(err.retryAfterMs, MAX_HONOURED_WAIT_MS);
      this.notBefore.set(kind, Math.max(this.notBefore.get(kind) ?? 0, until));
      return err;
    }
    if (!isRefusedAsIs(err)) return err;
    const requests = this.refusedRequests.get(method) ?? new Map<string, ExchangeError>();
    this.refusedRequests.set(method, requests);
    requests.set(key ?? digest(method, request), err);
    if (requests.size > REMEMBERED_PER_METHOD) {
      const [oldest] = requests.keys();
      if (oldest !== undefined) requests.delete(oldest);
    }
    if (!this.seen(err)) return err;
    return new ExchangeError(method, err.code, err.details, {
      cause: err.cause,
      repeated: true,
    });
  }

  /** Counts a refusal; true when the same method and message were refused before. */
  private seen(err: ExchangeError): boolean {
    const id = `${err.method}\0${err.details}`;
    const before = this.refusals.get(id);
    const now = this.now();
    this.refusals.delete(id);
    this.refusals.set(id, {
      method: err.method,
      code: status[err.code] ?? String(err.code),
      message: err.details,
      firstAtMs: before?.firstAtMs ?? now,
      lastAtMs: now,
      times: (before?.times ?? 0) + 1,
    });
    if (this.refusals.size > REFUSALS_SHOWN) {
      const [oldest] = this.refusals.keys();
      if (oldest !== undefined) this.refusals.delete(oldest);
    }
    return before !== undefined;
  }
}
