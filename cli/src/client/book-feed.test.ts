// The copy of a book kept from the live feed: events parsed from the
// stream's text, applied in sequence, skipped when already applied, and a
// gap (a number skipped, or a heartbeat ahead) taken again from a snapshot.

import { describe, expect, it } from 'vitest';

import { apply, copyOf, followBook, sseEvents, viewOf } from './book-feed.js';
import type { BookCopy, FeedEvent } from './book-feed.js';

const snapshot = (sequence: number, askGpus = 16): FeedEvent => ({
  event: 'snapshot',
  id: String(sequence),
  data: {
    type: 'snapshot',
    gpu_type: 'h100',
    zone: 'us-west-1',
    sequence,
    time: '2026-11-27T00:00:00Z',
    bids: [{ price: 2, gpus: 8, orders: 1 }],
    asks: [{ price: 2.5, gpus: askGpus, orders: 2 }],
  },
});
const level = (sequence: number, side: 'bid' | 'ask', price: number, gpus: number): FeedEvent => ({
  event: 'level',
  id: String(sequence),
  data: { type: 'level', sequence, side, price, gpus, orders: gpus / 8, time: '' },
});

async function* chunks(...texts: string[]): AsyncGenerator<Uint8Array> {
  for (const t of texts) yield new TextEncoder().encode(t);
  await Promise.resolve();
}

describe('sseEvents', () => {
  it('reads events split anywhere across chunks; comments and unnamed fields are skipped', async () => {
    const events: FeedEvent[] = [];
    for await (const e of sseEvents(
      chunks(
        ': hello\n\nid: 7\nevent: lev',
        'el\ndata: {"sequence":7}\r\n\r\n',
        'event: heartbeat\ndata: {"sequence":7}\n\n',
      ),
    )) {
      events.push(e);
    }
    expect(events).toEqual([
      { event: 'level', id: '7', data: { sequence: 7 } },
      { event: 'heartbeat', id: undefined, data: { sequence: 7 } },
    ]);
  });
});

describe('apply', () => {
  it('sets and removes levels numbered one more than the copy', () => {
    let copy: BookCopy | undefined = copyOf(snapshot(10).data as never);
    ({ copy } = apply(copy, level(11, 'ask', 2.6, 8)));
    ({ copy } = apply(copy, level(12, 'bid', 2, 0)));
    expect(copy && viewOf(copy, 10)).toEqual({
      gpu_type: 'h100',
      zone: 'us-west-1',
      sequence: 12,
      bids: [],
      asks: [
        { price: 2.5, gpus: 16, orders: 2 },
        { price: 2.6, gpus: 8, orders: 1 },
      ],
    });
  });

  it('skips what the copy already has, and reports a gap (dropping the copy) when a number is missing', () => {
    const copy = copyOf(snapshot(10).data as never);
    expect(apply(copy, level(9, 'ask', 9, 8)).applied).toBe('skipped');
    expect(apply(copy, { event: 'heartbeat', id: undefined, data: { sequence: 10 } }).applied).toBe(
      'skipped',
    );
    expect(apply(copy, { event: 'heartbeat', id: undefined, data: { sequence: 11 } }).applied).toBe(
      'gap',
    );
    expect(apply(copy, level(12, 'ask', 9, 8))).toEqual({ copy: undefined, applied: 'gap' });
  });

  it('ignores updates before the first snapshot', () => {
    expect(apply(undefined, level(3, 'ask', 9, 8))).toEqual({
      copy: undefined,
      applied: 'skipped',
    });
  });
});

describe('followBook', () => {
  it('on a gap reopens the stream without Last-Event-ID (a fresh snapshot); after its end, with it', async () => {
    const opened: (number | undefined)[] = [];
    const streams: FeedEvent[][] = [
      [snapshot(10), level(11, 'ask', 2.6, 8), level(13, 'ask', 2.7, 8)],
      [snapshot(13, 24)],
      [level(14, 'bid', 1.9, 8)],
    ];
    const stop = new AbortController();
    const seen: number[] = [];
    await followBook({
      open: (lastId) => {
        opened.push(lastId);
        const events = streams.shift();
        if (events === undefined) stop.abort();
        return Promise.resolve(
          (async function* () {
            for (const e of events ?? []) yield e;
            await Promise.resolve();
          })(),
        );
      },
      signal: stop.signal,
      event: () => undefined,
      changed: (c) => seen.push(c.sequence),
      pause: () => Promise.resolve(),
      failed: (e) => {
        throw e;
      },
    });
    expect(opened).toEqual([undefined, undefined, 13, 14]);
    expect(seen).toEqual([10, 11, 13, 14]);
  });
});
