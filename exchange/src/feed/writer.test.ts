// The feed writer process (feed/writer.ts, feed/writer-process.ts), for
// real: a socket whose head this process wrote is handed over and the
// writer sends it the book's events; a SIGTERM does not stop it (the
// exchange does, through the channel); it ends a stream with its closed
// event when told; when it dies its streams end (their clients reconnect)
// and the next stream starts another; stop() ends it.

import { createServer, connect } from 'node:net';
import type { Server, Socket } from 'node:net';

import { afterEach, describe, expect, it, vi } from 'vitest';

import { sseEvent } from './sse.js';
import { FeedWriter } from './writer.js';

const BOOK = 'h100/us-west-1';

/** Waits until `cond` holds (vitest's vi.waitFor, 10 s at most). */
const until = (cond: () => boolean): Promise<void> =>
  vi.waitFor(
    () => {
      if (!cond()) throw new Error('not yet');
    },
    { timeout: 10_000, interval: 20 },
  );
const level = (seq: number): readonly [number, string] => [seq, sseEvent('level', {}, seq)];

interface Client {
  text(): string;
  readonly closed: Promise<void>;
}

/** A server whose every connection gets `head` and is handed to `writer` as having seen `through`. */
async function serving(
  writer: FeedWriter,
  through: number,
  ended: (id: number) => void,
): Promise<{ server: Server; connectClient: () => Promise<Client> }> {
  const server = createServer((socket: Socket) => {
    socket.write('head\n', () => {
      const id: number = writer.handOver(
        socket,
        { book: BOOK, epoch: 0, through, chunked: false, maxBufferedBytes: 1 << 20 },
        () => ended(id),
      );
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as { port: number }).port;
  const connectClient = async (): Promise<Client> => {
    const s = connect(port, '127.0.0.1');
    let got = '';
    s.on('data', (b: Buffer) => (got += b.toString()));
    const closed = new Promise<void>((r) => s.once('close', () => r()));
    s.on('error', () => undefined);
    await until(() => got.startsWith('head\n'));
    return { text: () => got, closed };
  };
  return { server, connectClient };
}

const cleanups: (() => void)[] = [];
afterEach(() => {
  for (const c of cleanups.splice(0)) c();
});

describe('FeedWriter', () => {
  it('writes the book’s events to a socket handed over, from its start on, and ends one stream with its closed event', async () => {
    const writer = new FeedWriter();
    const ended: number[] = [];
    const { server, connectClient } = await serving(writer, 2, (id) => ended.push(id));
    cleanups.push(() => {
      writer.stop();
      server.close();
    });
    // Events 1–2 before anyone watched; the stream starts after 2.
    const client = await connectClient();
    await until(() => writer.watching === 1 && writer.pid !== undefined);
    writer.post({ t: 'events', book: BOOK, epoch: 0, events: [level(3), level(4)] });
    await until(() => client.text().includes('id: 4\n'));
    expect(client.text()).toBe(`head\n${level(3)[1]}${level(4)[1]}`);
    // A signal to the process group is the exchange's to act on: the writer carries on.
    process.kill(writer.pid as number, 'SIGTERM');
    writer.post({ t: 'events', book: BOOK, epoch: 0, events: [level(5)] });
    await until(() => client.text().includes('id: 5\n'));
    writer.closeOne(1, 'unavailable');
    await client.closed;
    expect(client.text()).toContain('event: closed\n');
    expect(client.text()).toContain('"reason":"unavailable"');
    await until(() => ended.length === 1);
    expect(writer.watching).toBe(0);
  });

  it('when it dies its streams end and the next stream starts another; stop() ends it', async () => {
    const writer = new FeedWriter();
    const ended: number[] = [];
    const { server, connectClient } = await serving(writer, 0, (id) => ended.push(id));
    cleanups.push(() => server.close());
    const first = await connectClient();
    await until(() => writer.pid !== undefined && writer.watching === 1);
    const pid = writer.pid as number;
    process.kill(pid, 'SIGKILL');
    await first.closed;
    await until(() => ended.length === 1 && writer.watching === 0);

    const second = await connectClient();
    await until(() => writer.pid !== undefined && writer.watching === 1);
    expect(writer.pid).not.toBe(pid);
    writer.post({ t: 'events', book: BOOK, epoch: 0, events: [level(1)] });
    await until(() => second.text().includes('id: 1\n'));
    const last = writer.pid as number;
    writer.stop();
    await second.closed;
    await until(() => !alive(last));
  });
});

describe('FeedWriter, a writer that keeps dying', () => {
  it('is not started again after three deaths within a minute: the exchange writes the streams itself', async () => {
    const writer = new FeedWriter();
    const { server, connectClient } = await serving(writer, 0, () => undefined);
    cleanups.push(() => {
      writer.stop();
      server.close();
    });
    for (let i = 0; i < 3; i++) {
      expect(writer.closed).toBe(false);
      const client = await connectClient();
      await until(() => writer.pid !== undefined && writer.watching === 1);
      process.kill(writer.pid as number, 'SIGKILL');
      await client.closed;
      await until(() => writer.watching === 0);
    }
    await until(() => writer.closed);
  });
});

describe('FeedWriter, a writer that stops taking what is sent', () => {
  it('is killed once more than its bound waits for it; its streams end', async () => {
    const writer = new FeedWriter({ maxUntakenBytes: 4096 });
    const ended: number[] = [];
    const { server, connectClient } = await serving(writer, 0, (id) => ended.push(id));
    cleanups.push(() => {
      writer.stop();
      server.close();
    });
    const client = await connectClient();
    await until(() => writer.pid !== undefined && writer.watching === 1);
    const pid = writer.pid as number;
    writer.post({ t: 'events', book: BOOK, epoch: 0, events: [level(1)] });
    await until(() => client.text().includes('id: 1\n'));
    // Taken so far; now it takes nothing more.
    process.kill(pid, 'SIGSTOP');
    const big = 'x'.repeat(1024);
    for (let seq = 2; alive(pid) && seq < 1000; seq++) {
      writer.post({ t: 'events', book: BOOK, epoch: 0, events: [[seq, big]] });
      // One batch a turn.
      await new Promise((r) => setImmediate(r));
    }
    await client.closed;
    await until(() => !alive(pid) && ended.length === 1 && writer.watching === 0);
  });
});

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
