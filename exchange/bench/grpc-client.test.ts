// The agents bench's lean gRPC client against a real grpc-js server on
// loopback: its framing is what grpc-js decodes, and it reads grpc-js's
// answers (trailers-only or headers then trailers, retry-after-ms, a
// percent-encoded grpc-message), deadlines, a refused or dropped connection
// and a GOAWAY.

import { Metadata, Server, ServerCredentials, status } from '@grpc/grpc-js';
import type { ServerUnaryCall, UntypedHandleCall, sendUnaryData } from '@grpc/grpc-js';
import { AgentServiceService, NodeStatus } from '@gpux/proto';
import type { HeartbeatRequest, HeartbeatResponse } from '@gpux/proto';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';

import { LeanGrpcClient, grpcFrame, readGrpcFrame } from './grpc-client.js';

const HEARTBEAT = AgentServiceService.heartbeat;
const TOKEN = 'gpux_0123456789abcdef';
const REQUEST: HeartbeatRequest = {
  clusterId: 'cls_01jdq3m5x0aaaaaaaaaaaaaaaa',
  nodes: [
    {
      hostname: 'gpu-a.bench.internal',
      healthy: true,
      problem: '',
      gpus: [
        {
          index: 0,
          name: 'NVIDIA H100 80GB HBM3',
          uuid: 'GPU-00000000-0000-0000-0000-000000000001',
          memoryTotalMib: 81_559,
          utilizationPercent: 42,
          temperatureC: 51,
        },
      ],
    },
  ],
};
const RESPONSE: HeartbeatResponse = {
  nodes: [
    {
      nodeId: 'nod_01jdq3m5x0aaaaaaaaaaaaaaaa',
      hostname: 'gpu-a.bench.internal',
      status: NodeStatus.NODE_STATUS_ONLINE,
      leaseId: '',
    },
  ],
};

type Heartbeat = (
  call: ServerUnaryCall<HeartbeatRequest, HeartbeatResponse>,
  cb: sendUnaryData<HeartbeatResponse>,
) => void;

interface Seen {
  readonly request: HeartbeatRequest;
  readonly authorization: unknown;
  readonly deadline: unknown;
}

/** A grpc-js server whose Heartbeat does what `answers` says next; every other method is UNIMPLEMENTED. */
async function startServer(options: Record<string, number> = {}) {
  const server = new Server(options);
  const answers: Heartbeat[] = [];
  const seen: Seen[] = [];
  const heartbeat: Heartbeat = (call, cb) => {
    seen.push({
      request: call.request,
      authorization: call.metadata.get('authorization')[0],
      deadline: call.getDeadline(),
    });
    const next = answers.shift() ?? ((_c, done) => done(null, RESPONSE));
    next(call, cb);
  };
  server.addService(AgentServiceService, {
    heartbeat: heartbeat as UntypedHandleCall,
  });
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (e, p) =>
      e === null ? resolve(p) : reject(e),
    ),
  );
  return { server, port, answers, seen };
}

/** Its connections closed at once (what a crash or a restart of the exchange does to them). */
function stopServer(server: Server): void {
  server.forceShutdown();
}

function trailers(entries: Record<string, string>): Metadata {
  const md = new Metadata();
  for (const [k, v] of Object.entries(entries)) md.set(k, v);
  return md;
}

describe('gRPC message frames', () => {
  it('a message is prefixed by flag 0 and its length, big-endian', () => {
    const framed = grpcFrame(Uint8Array.from([7, 8, 9]));
    expect([...framed]).toEqual([0, 0, 0, 0, 3, 7, 8, 9]);
    expect([...(readGrpcFrame(framed) as Buffer)]).toEqual([7, 8, 9]);
    expect([...(readGrpcFrame(grpcFrame(new Uint8Array(0))) as Buffer)]).toEqual([]);
  });

  it('a compressed, short or longer body is no message', () => {
    expect(readGrpcFrame(Buffer.from([1, 0, 0, 0, 1, 5]))).toMatch(/compressed/);
    expect(readGrpcFrame(Buffer.from([0, 0, 0]))).toMatch(/no message frame/);
    expect(readGrpcFrame(Buffer.from([0, 0, 0, 0, 1, 5, 6]))).toMatch(/7 bytes for a message of 1/);
  });
});

describe('LeanGrpcClient against a grpc-js server', () => {
  let s: Awaited<ReturnType<typeof startServer>>;
  let client: LeanGrpcClient;

  beforeAll(async () => {
    s = await startServer();
  });
  afterEach(() => {
    client?.close();
    s.answers.length = 0;
    s.seen.length = 0;
  });
  afterAll(() => stopServer(s.server));

  const open = (deadlineMs = 5_000): LeanGrpcClient =>
    (client = new LeanGrpcClient({ target: `127.0.0.1:${s.port}`, deadlineMs }));

  it('a request prepared once is sent twice on one connection; grpc-js decodes it, its token and deadline', async () => {
    const before = Date.now();
    const c = open();
    const call = c.prepare(HEARTBEAT.path, HEARTBEAT.requestSerialize(REQUEST), TOKEN);
    const first = await c.call(call, true);
    const second = await c.call(call);
    expect(first).toMatchObject({ code: status.OK, details: 'OK', retryAfterMs: undefined });
    expect(HEARTBEAT.responseDeserialize(first.message as Buffer)).toEqual(RESPONSE);
    // Not asked for: not kept.
    expect(second).toMatchObject({ code: status.OK, message: undefined });
    expect(s.seen.map((x) => x.request)).toEqual([REQUEST, REQUEST]);
    expect(s.seen.map((x) => x.authorization)).toEqual([`Bearer ${TOKEN}`, `Bearer ${TOKEN}`]);
    // grpc-timeout: the server knows the call's deadline, at most 5 s from its start.
    for (const x of s.seen) {
      expect(Number(x.deadline)).toBeGreaterThan(before);
      expect(Number(x.deadline)).toBeLessThanOrEqual(Date.now() + 5_000);
    }
    expect(c.connections).toBe(1);
  });

  it('a trailers-only RESOURCE_EXHAUSTED: its retry-after-ms and its percent-encoded message', async () => {
    s.answers.push((_call, cb) =>
      cb({
        code: status.RESOURCE_EXHAUSTED,
        details: 'heartbeats: at most 2 per interval — wait 1.5 s (100 %)',
        metadata: trailers({ 'retry-after-ms': '1500' }),
      }),
    );
    const c = open();
    const a = await c.call(c.prepare(HEARTBEAT.path, HEARTBEAT.requestSerialize(REQUEST), TOKEN));
    expect(a).toEqual({
      code: status.RESOURCE_EXHAUSTED,
      details: 'heartbeats: at most 2 per interval — wait 1.5 s (100 %)',
      retryAfterMs: 1500,
      message: undefined,
    });
  });

  it('a status in trailers after the response headers', async () => {
    s.answers.push((call, cb) => {
      call.sendMetadata(new Metadata());
      cb({
        code: status.INVALID_ARGUMENT,
        details: 'nodes[0].gpus: at most 8',
        metadata: trailers({ 'retry-after-ms': 'soon' }),
      });
    });
    const c = open();
    const a = await c.call(
      c.prepare(HEARTBEAT.path, HEARTBEAT.requestSerialize(REQUEST), TOKEN),
      true,
    );
    expect(a).toEqual({
      code: status.INVALID_ARGUMENT,
      details: 'nodes[0].gpus: at most 8',
      retryAfterMs: undefined,
      message: undefined,
    });
  });

  it('a method the server does not serve is UNIMPLEMENTED', async () => {
    const c = open();
    const a = await c.call(c.prepare(AgentServiceService.attach.path, new Uint8Array(0), TOKEN));
    expect(a.code).toBe(status.UNIMPLEMENTED);
  });

  it('a call not answered within its deadline is DEADLINE_EXCEEDED; the connection serves the next', async () => {
    s.answers.push(() => undefined);
    const c = open(200);
    const call = c.prepare(HEARTBEAT.path, HEARTBEAT.requestSerialize(REQUEST), TOKEN);
    expect((await c.call(call)).code).toBe(status.DEADLINE_EXCEEDED);
    expect((await c.call(call)).code).toBe(status.OK);
    expect(c.connections).toBe(1);
  });
});

describe('LeanGrpcClient and its connection', () => {
  it('no server: UNAVAILABLE; one listening later is reached by the next call', async () => {
    const s = await startServer();
    const port = s.port;
    stopServer(s.server);
    const client = new LeanGrpcClient({ target: `127.0.0.1:${port}`, deadlineMs: 5_000 });
    const call = client.prepare(HEARTBEAT.path, HEARTBEAT.requestSerialize(REQUEST), TOKEN);
    try {
      const a = await client.call(call);
      expect(a.code).toBe(status.UNAVAILABLE);
      expect(a.details).toMatch(/ECONNREFUSED/);
      const again = new Server();
      again.addService(AgentServiceService, {
        heartbeat: ((_c, cb) => cb(null, RESPONSE)) as Heartbeat as UntypedHandleCall,
      });
      await new Promise<number>((resolve, reject) =>
        again.bindAsync(`127.0.0.1:${port}`, ServerCredentials.createInsecure(), (e, p) =>
          e === null ? resolve(p) : reject(e),
        ),
      );
      expect((await client.call(call)).code).toBe(status.OK);
      expect(client.connections).toBe(2);
      stopServer(again);
    } finally {
      client.close();
    }
  });

  it('a call in flight when the server drops its connections is UNAVAILABLE', async () => {
    const s = await startServer();
    s.answers.push(() => s.server.forceShutdown());
    const client = new LeanGrpcClient({ target: `127.0.0.1:${s.port}`, deadlineMs: 5_000 });
    try {
      const call = client.prepare(HEARTBEAT.path, HEARTBEAT.requestSerialize(REQUEST), TOKEN);
      expect((await client.call(call)).code).toBe(status.UNAVAILABLE);
    } finally {
      client.close();
    }
  });

  it("after the server's GOAWAY (its maximum connection age) the next call opens a new connection", async () => {
    const s = await startServer({ 'grpc.max_connection_age_ms': 100 });
    const client = new LeanGrpcClient({ target: `127.0.0.1:${s.port}`, deadlineMs: 5_000 });
    const call = client.prepare(HEARTBEAT.path, HEARTBEAT.requestSerialize(REQUEST), TOKEN);
    try {
      expect((await client.call(call)).code).toBe(status.OK);
      await vi.waitFor(() => expect(client.goaways).toBeGreaterThan(0), { timeout: 5_000 });
      expect((await client.call(call)).code).toBe(status.OK);
      expect(client.connections).toBe(2);
    } finally {
      client.close();
      stopServer(s.server);
    }
  });
});
