// The client's side of the limits contract (issue 18): a RESOURCE_EXHAUSTED
// carries the time to wait in the trailing metadata `retry-after-ms`, read
// here from a real grpc-js server on loopback.

import { Metadata, Server, ServerCredentials, status } from '@grpc/grpc-js';
import type { ServiceError, UntypedHandleCall } from '@grpc/grpc-js';
import { AgentServiceService } from '@gpux/proto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import type { ExchangeTls } from '../config.js';
import { selfSigned } from '../testing/certificates.js';

import {
  ERROR_KINDS,
  ExchangeError,
  GrpcExchangeClient,
  errorKind,
  isRefusedAsIs,
  isTransient,
  retryAfterMsOf,
} from './exchange-client.js';

const CLUSTER = 'cls_01jdq3m5x0aaaaaaaaaaaaaaaa';

/** `server` listening on loopback with `creds`, and a client of it. */
async function clientOf(
  server: Server,
  creds: ServerCredentials,
  tls: ExchangeTls | undefined,
): Promise<GrpcExchangeClient> {
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', creds, (e, p) => (e === null ? resolve(p) : reject(e))),
  );
  return new GrpcExchangeClient({
    target: `127.0.0.1:${port}`,
    tls,
    token: 'gpux_0123456789abcdef',
    deadlineMs: 5_000,
  });
}

async function shutDown(client: GrpcExchangeClient | undefined, server: Server | undefined) {
  client?.close();
  await new Promise<void>((resolve) => (server ? server.tryShutdown(() => resolve()) : resolve()));
}

function trailers(value?: string): Metadata {
  const md = new Metadata();
  if (value !== undefined) md.set('retry-after-ms', value);
  return md;
}

describe('retryAfterMsOf', () => {
  it('reads a decimal integer of milliseconds; anything else is no wait', () => {
    expect(retryAfterMsOf(trailers('1500'))).toBe(1500);
    expect(retryAfterMsOf(trailers('0'))).toBe(0);
    expect(retryAfterMsOf(trailers())).toBeUndefined();
    expect(retryAfterMsOf(undefined)).toBeUndefined();
    for (const bad of ['-1', '1.5', '1e3', 'soon', '', '99999999999']) {
      expect(retryAfterMsOf(trailers(bad)), bad).toBeUndefined();
    }
  });
});

describe('which errors are worth sending again', () => {
  const err = (code: status, retryAfterMs?: number) =>
    new ExchangeError('Heartbeat', code, 'x', { retryAfterMs });

  it('a limit with a time to wait is transient; the same code without one is a refusal as is', () => {
    expect(isTransient(err(status.RESOURCE_EXHAUSTED, 200))).toBe(true);
    expect(isRefusedAsIs(err(status.RESOURCE_EXHAUSTED, 200))).toBe(false);
    // grpc-js answers a message over the server's maximum so: the same message is refused again.
    expect(isTransient(err(status.RESOURCE_EXHAUSTED))).toBe(false);
    expect(isRefusedAsIs(err(status.RESOURCE_EXHAUSTED))).toBe(true);
  });

  it('INVALID_ARGUMENT is refused as is and never transient', () => {
    expect(isTransient(err(status.INVALID_ARGUMENT))).toBe(false);
    expect(isRefusedAsIs(err(status.INVALID_ARGUMENT))).toBe(true);
    expect(isRefusedAsIs(err(status.UNAVAILABLE))).toBe(false);
    expect(isRefusedAsIs(new Error('not from the exchange'))).toBe(false);
  });

  it("the exchange's error kinds, each as its gRPC code reaches the agent", () => {
    // The exchange's typed errors → gRPC codes; what each means here.
    const answers: [string, status, number | undefined, string, boolean, boolean][] = [
      // exchange kind, code, retry-after, agent kind, transient, refused as is
      ['not_found', status.NOT_FOUND, undefined, 'not_found', false, true],
      ['conflict', status.FAILED_PRECONDITION, undefined, 'conflict', false, false],
      ['rate limited', status.RESOURCE_EXHAUSTED, 1_000, 'busy', true, false],
      ['validation', status.INVALID_ARGUMENT, undefined, 'invalid', false, true],
      ['unauthenticated', status.UNAUTHENTICATED, undefined, 'unauthenticated', false, false],
      ['permission', status.PERMISSION_DENIED, undefined, 'permission', false, false],
      ['unavailable', status.UNAVAILABLE, undefined, 'unreachable', true, false],
      ['internal', status.INTERNAL, undefined, 'internal', true, false],
    ];
    for (const [what, code, wait, kind, transient, asIs] of answers) {
      const e = err(code, wait);
      expect([what, errorKind(e), isTransient(e), isRefusedAsIs(e)]).toEqual([
        what,
        kind,
        transient,
        asIs,
      ]);
    }
  });

  it('every gRPC code has a kind; what never reached the exchange is tried again', () => {
    const codes = Object.values(status).filter((v): v is status => typeof v === 'number');
    expect(codes.filter((c) => ERROR_KINDS[c] === undefined)).toEqual([]);
    for (const c of [status.DEADLINE_EXCEEDED, status.CANCELLED, status.ABORTED, status.UNKNOWN]) {
      expect(isTransient(err(c))).toBe(true);
    }
    // A failure that is not the exchange's answer (a file, the cluster's API): tried again.
    expect(isTransient(new Error('EIO'))).toBe(true);
  });
});

describe('GrpcExchangeClient against a grpc-js server', () => {
  let server: Server;
  let client: GrpcExchangeClient;
  const answers: Partial<ServiceError>[] = [];

  beforeAll(async () => {
    server = new Server();
    const refuse: UntypedHandleCall = (_call: unknown, cb: (e: Partial<ServiceError>) => void) => {
      const next = answers.shift();
      cb(next ?? { code: status.UNIMPLEMENTED, details: 'no answer set' });
    };
    const handlers = Object.fromEntries(
      Object.keys(AgentServiceService).map((name) => [name, refuse]),
    );
    server.addService(AgentServiceService, handlers);
    client = await clientOf(server, ServerCredentials.createInsecure(), undefined);
  });

  afterAll(() => shutDown(client, server));

  it('a RESOURCE_EXHAUSTED with the retry-after-ms trailer carries the wait', async () => {
    answers.push({
      code: status.RESOURCE_EXHAUSTED,
      details: 'heartbeats: at most 2 per interval',
      metadata: trailers('2500'),
    });
    const err = await client.heartbeat({ clusterId: CLUSTER, nodes: [] }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ExchangeError);
    expect(err).toMatchObject({
      method: 'Heartbeat',
      code: status.RESOURCE_EXHAUSTED,
      details: 'heartbeats: at most 2 per interval',
      retryAfterMs: 2500,
      repeated: false,
    });
    expect(isTransient(err)).toBe(true);
  });

  it('an INVALID_ARGUMENT carries the exchange message and no wait', async () => {
    answers.push({ code: status.INVALID_ARGUMENT, details: 'gpus[0].name: at most 256 bytes' });
    const err = await client.heartbeat({ clusterId: CLUSTER, nodes: [] }).catch((e: unknown) => e);
    expect(err).toMatchObject({
      code: status.INVALID_ARGUMENT,
      details: 'gpus[0].name: at most 256 bytes',
      retryAfterMs: undefined,
    });
    expect(isRefusedAsIs(err)).toBe(true);
  });
});

describe('new TLS files (issue 23)', () => {
  let server: Server;
  let client: GrpcExchangeClient;
  /** Heartbeats the server holds until the test answers them, with the connection each came on. */
  const held: { peer: string; answer: () => void }[] = [];
  const arrived: (() => void)[] = [];
  const cert = selfSigned('127.0.0.1');

  beforeAll(async () => {
    server = new Server();
    const hold: UntypedHandleCall = (
      call: { getPeer(): string },
      cb: (e: null, res: { nodes: [] }) => void,
    ) => {
      held.push({ peer: call.getPeer(), answer: () => cb(null, { nodes: [] }) });
      arrived.shift()?.();
    };
    server.addService(AgentServiceService, { heartbeat: hold });
    client = await clientOf(
      server,
      ServerCredentials.createSsl(null, [{ private_key: cert.key, cert_chain: cert.cert }]),
      { caPem: cert.cert, certPem: undefined, keyPem: undefined },
    );
  });

  afterAll(() => shutDown(client, server));

  const heldCall = (): Promise<void> => new Promise((resolve) => arrived.push(resolve));

  it('the next calls go over a new connection; a call under way on the old one is answered', async () => {
    const first = heldCall();
    const before = client.heartbeat({ clusterId: CLUSTER, nodes: [] });
    await first;
    client.useTls({ caPem: cert.cert, certPem: undefined, keyPem: undefined });
    const second = heldCall();
    const after = client.heartbeat({ clusterId: CLUSTER, nodes: [] });
    await second;
    expect(held).toHaveLength(2);
    expect(held[1]?.peer).not.toBe(held[0]?.peer);
    // The old channel is closed only once its call is answered: it is not lost.
    held[0]?.answer();
    await expect(before).resolves.toEqual({ nodes: [] });
    held[1]?.answer();
    await expect(after).resolves.toEqual({ nodes: [] });
  });
});
