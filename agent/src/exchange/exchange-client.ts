// The exchange as the agent sees it (agent.proto, D29): promises over the
// generated gRPC client, the provider's token on every call, a deadline on
// each. `ExchangeApi` is what the rest of the agent uses, so tests and
// `gpux start` may pass another implementation.

import { Metadata, credentials, status } from '@grpc/grpc-js';
import type { CallOptions, ChannelCredentials, ServiceError } from '@grpc/grpc-js';
import { AgentServiceClient } from '@gpux/proto';
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

import type { ExchangeTls } from '../config.js';

export interface ExchangeApi {
  attach(req: AttachRequest): Promise<AttachResponse>;
  heartbeat(req: HeartbeatRequest): Promise<HeartbeatResponse>;
  listSells(clusterId: string): Promise<ListSellsResponse>;
  publishSell(req: PublishSellRequest): Promise<PublishSellResponse>;
  withdrawSell(clusterId: string, orderId: string): Promise<WithdrawSellResponse>;
  listLeases(clusterId: string): Promise<ListLeasesResponse>;
  reportProvisioned(req: ReportProvisionedRequest): Promise<ReportResponse>;
  reportRevoked(clusterId: string, leaseId: string): Promise<ReportResponse>;
  reportFailed(clusterId: string, leaseId: string, reason: string): Promise<ReportResponse>;
  close(): void;
}

/** The trailing metadata key of a refusal above the provider's limits: how long to wait, in ms. */
export const RETRY_AFTER_KEY = 'retry-after-ms';

export interface ExchangeErrorDetails {
  /** The exchange's `retry-after-ms` trailer: no call of this kind before this many ms. */
  readonly retryAfterMs?: number | undefined;
  /**
   * This refusal was met before (the same method and message), so it has
   * been logged already; also set when the agent answered from its memory
   * of a refusal without sending the request again (paced-exchange.ts).
   */
  readonly repeated?: boolean | undefined;
}

/** A call the exchange refused or that did not get through, with its gRPC code. */
export class ExchangeError extends Error {
  override readonly name = 'ExchangeError';
  readonly retryAfterMs: number | undefined;
  readonly repeated: boolean;
  constructor(
    readonly method: string,
    readonly code: status,
    /** The exchange's own words (the status details). */
    readonly details: string,
    options?: ErrorOptions & ExchangeErrorDetails,
  ) {
    super(`${method}: ${status[code] ?? code}: ${details}`, options);
    this.retryAfterMs = options?.retryAfterMs;
    this.repeated = options?.repeated ?? false;
  }
}

/**
 * What an error of the exchange means to the agent, by its gRPC status (one
 * table, ERROR_KINDS):
 *
 *   unreachable      not reached, or no answer in time: try again later
 *   busy             a limit, with the time to wait (retry-after-ms): try again then
 *   internal         failed inside the exchange: try again later
 *   invalid          the request itself is refused (a field, a rule of the
 *                    API, too large): sent again unchanged it is refused again
 *   not_found        it names what the exchange does not have (a lease, a
 *                    cluster, an order): ids are never reused, so the same
 *                    request is refused again
 *   conflict         the state it meets does not allow it (a lease no longer
 *                    live): not retried, the next round asks afresh
 *   unauthenticated  the token is unknown or revoked
 *   permission       the token lacks the provider scope
 */
export type ExchangeErrorKind =
  | 'unreachable'
  | 'busy'
  | 'internal'
  | 'invalid'
  | 'not_found'
  | 'conflict'
  | 'unauthenticated'
  | 'permission';

/**
 * gRPC status → kind. The exchange answers not_found → NOT_FOUND, conflict →
 * FAILED_PRECONDITION, rate limited → RESOURCE_EXHAUSTED (with
 * retry-after-ms), validation → INVALID_ARGUMENT, unauthenticated →
 * UNAUTHENTICATED, permission → PERMISSION_DENIED, unavailable →
 * UNAVAILABLE, internal → INTERNAL; the rest are what gRPC itself may say.
 */
export const ERROR_KINDS: Readonly<Record<status, ExchangeErrorKind>> = {
  [status.OK]: 'internal', // an error never carries it; if one did, the exchange misbehaved
  [status.CANCELLED]: 'unreachable',
  [status.UNKNOWN]: 'internal',
  [status.INVALID_ARGUMENT]: 'invalid',
  [status.DEADLINE_EXCEEDED]: 'unreachable',
  [status.NOT_FOUND]: 'not_found',
  [status.ALREADY_EXISTS]: 'conflict',
  [status.PERMISSION_DENIED]: 'permission',
  // Without a time to wait: the message is larger than the service takes (invalid).
  [status.RESOURCE_EXHAUSTED]: 'busy',
  [status.FAILED_PRECONDITION]: 'conflict',
  [status.ABORTED]: 'unreachable',
  [status.OUT_OF_RANGE]: 'invalid',
  [status.UNIMPLEMENTED]: 'invalid',
  [status.INTERNAL]: 'internal',
  [status.UNAVAILABLE]: 'unreachable',
  [status.DATA_LOSS]: 'internal',
  [status.UNAUTHENTICATED]: 'unauthenticated',
};

const TRANSIENT: ReadonlySet<ExchangeErrorKind> = new Set(['unreachable', 'busy', 'internal']);
const REFUSED_AS_IS: ReadonlySet<ExchangeErrorKind> = new Set(['invalid', 'not_found']);

/** The kind of an exchange error (ERROR_KINDS); a limit without a time to wait is `invalid`. */
export function errorKind(err: ExchangeError): ExchangeErrorKind {
  if (err.code === status.RESOURCE_EXHAUSTED && err.retryAfterMs === undefined) return 'invalid';
  return ERROR_KINDS[err.code] ?? 'internal';
}

/**
 * Worth trying again later: the exchange was not reached, was busy (a
 * limit, with the time to wait), or failed inside; and any failure that is
 * not the exchange's answer (a file, the cluster's API). The other kinds
 * answer the same way next time.
 */
export function isTransient(err: unknown): boolean {
  if (!(err instanceof ExchangeError)) return true;
  return TRANSIENT.has(errorKind(err));
}

/**
 * The request itself is what the exchange refuses: sent again unchanged it
 * is answered the same way (invalid, not_found), so it is not sent again
 * (paced-exchange.ts).
 */
export function isRefusedAsIs(err: unknown): err is ExchangeError {
  return err instanceof ExchangeError && REFUSED_AS_IS.has(errorKind(err));
}

/** A refusal logged before (or not sent at all): shown in the status, not logged again. */
export function isRepeatedRefusal(err: unknown): boolean {
  return err instanceof ExchangeError && err.repeated;
}

/** The `retry-after-ms` trailer as ms (a decimal integer); undefined when absent or malformed. */
export function retryAfterMsOf(trailers: Metadata | undefined): number | undefined {
  const [value] = trailers?.get(RETRY_AFTER_KEY) ?? [];
  if (typeof value !== 'string' || !/^\d{1,10}$/.test(value.trim())) return undefined;
  return Number(value.trim());
}

export interface GrpcExchangeOptions {
  readonly target: string;
  readonly tls: ExchangeTls | undefined;
  readonly token: string;
  readonly deadlineMs: number;
}

type Callback<Res> = (error: ServiceError | null, response: Res) => void;
type Invoke<Res> = (
  client: AgentServiceClient,
  metadata: Metadata,
  options: Partial<CallOptions>,
  callback: Callback<Res>,
) => unknown;

function credentialsOf(tls: ExchangeTls | undefined): ChannelCredentials {
  return tls === undefined
    ? credentials.createInsecure()
    : credentials.createSsl(tls.caPem ?? null, tls.keyPem ?? null, tls.certPem ?? null);
}

export class GrpcExchangeClient implements ExchangeApi {
  private client: AgentServiceClient;
  /** Calls under way on each channel: a replaced one is closed once its calls are done. */
  private readonly inFlight = new Map<AgentServiceClient, number>();
  private readonly retired = new Set<AgentServiceClient>();
  private readonly metadata: Metadata;

  constructor(private readonly o: GrpcExchangeOptions) {
    this.client = new AgentServiceClient(o.target, credentialsOf(o.tls));
    this.metadata = new Metadata();
    this.metadata.set('authorization', `Bearer ${o.token}`);
  }

  /**
   * New TLS files (renewed, tls-files.ts): the calls from now on go over a
   * new channel with them; the old channel is closed once the calls under
   * way on it have finished (closing it at once would fail those not yet
   * sent).
   */
  useTls(tls: ExchangeTls): void {
    const old = this.client;
    this.client = new AgentServiceClient(this.o.target, credentialsOf(tls));
    this.retired.add(old);
    this.closeIfDone(old);
  }

  private closeIfDone(c: AgentServiceClient): void {
    if (!this.retired.has(c) || (this.inFlight.get(c) ?? 0) > 0) return;
    this.retired.delete(c);
    this.inFlight.delete(c);
    c.close();
  }

  private call<Res>(name: string, invoke: Invoke<Res>): Promise<Res> {
    return new Promise((resolve, reject) => {
      const client = this.client;
      this.inFlight.set(client, (this.inFlight.get(client) ?? 0) + 1);
      invoke(client, this.metadata, { deadline: Date.now() + this.o.deadlineMs }, (err, res) => {
        this.inFlight.set(client, (this.inFlight.get(client) ?? 1) - 1);
        this.closeIfDone(client);
        if (err === null) resolve(res);
        else {
          reject(
            new ExchangeError(name, err.code, err.details || err.message, {
              cause: err,
              retryAfterMs: retryAfterMsOf(err.metadata),
            }),
          );
        }
      });
    });
  }

  attach(req: AttachRequest): Promise<AttachResponse> {
    return this.call('Attach', (client, md, opts, cb) => client.attach(req, md, opts, cb));
  }

  heartbeat(req: HeartbeatRequest): Promise<HeartbeatResponse> {
    return this.call('Heartbeat', (client, md, opts, cb) => client.heartbeat(req, md, opts, cb));
  }

  listSells(clusterId: string): Promise<ListSellsResponse> {
    return this.call('ListSells', (client, md, opts, cb) =>
      client.listSells({ clusterId }, md, opts, cb),
    );
  }

  publishSell(req: PublishSellRequest): Promise<PublishSellResponse> {
    return this.call('PublishSell', (client, md, opts, cb) =>
      client.publishSell(req, md, opts, cb),
    );
  }

  withdrawSell(clusterId: string, orderId: string): Promise<WithdrawSellResponse> {
    return this.call('WithdrawSell', (client, md, opts, cb) =>
      client.withdrawSell({ clusterId, orderId }, md, opts, cb),
    );
  }

  listLeases(clusterId: string): Promise<ListLeasesResponse> {
    return this.call('ListLeases', (client, md, opts, cb) =>
      client.listLeases({ clusterId }, md, opts, cb),
    );
  }

  reportProvisioned(req: ReportProvisionedRequest): Promise<ReportResponse> {
    return this.call('ReportProvisioned', (client, md, opts, cb) =>
      client.reportProvisioned(req, md, opts, cb),
    );
  }

  reportRevoked(clusterId: string, leaseId: string): Promise<ReportResponse> {
    return this.call('ReportRevoked', (client, md, opts, cb) =>
      client.reportRevoked({ clusterId, leaseId }, md, opts, cb),
    );
  }

  reportFailed(clusterId: string, leaseId: string, reason: string): Promise<ReportResponse> {
    return this.call('ReportFailed', (client, md, opts, cb) =>
      client.reportFailed({ clusterId, leaseId, reason }, md, opts, cb),
    );
  }

  close(): void {
    for (const c of this.retired) c.close();
    this.retired.clear();
    this.client.close();
  }
}
