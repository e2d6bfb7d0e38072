// The subscribers of `npm run bench -- feed` (feed-bench.ts), in a process
// of their own so that reading a thousand streams never delays the bench's
// order load, whose latencies it measures. Driven over IPC:
//
//   { cmd: 'open', url, count, sampleEvery } → opens `count` streams of the
//       book at `url`; answers { ok: 'opened' } once each has its snapshot.
//   { cmd: 'close' } → closes them; answers with what they saw (Seen).
//
// Each subscriber checks that every level and trade is numbered one more
// than the last (a gap otherwise). Every `sampleEvery`-th one also measures
// fan-out: for each level event, the time it arrived minus the `time` the
// exchange stamped on it when the batch committed (both the machine's
// clock, in ms). Parsing is kept lean: the bytes are ASCII, scanned as
// latin1 text, and only sampled subscribers parse a field of the JSON.

import http from 'node:http';

export interface Seen {
  readonly subscribers: number;
  /** Level and trade events received, all subscribers together. */
  readonly updates: number;
  readonly gaps: number;
  /** Subscribers the exchange ended, by the reason of its closed event. */
  readonly closed: Record<string, number>;
  /** Subscribers whose stream ended without a closed event, or failed. */
  readonly broken: number;
  /** Fan-out latencies of the sampled subscribers, ms. */
  readonly fanOutMs: number[];
}

type Command = { cmd: 'open'; url: string; count: number; sampleEvery: number } | { cmd: 'close' };

class Subscriber {
  last = -1;
  updates = 0;
  gaps = 0;
  closedReason: string | undefined;
  broken = false;
  private carry = '';
  private req: http.ClientRequest | undefined;

  constructor(
    private readonly sampled: boolean,
    private readonly fanOut: number[],
  ) {}

  open(url: string, onSnapshot: () => void): void {
    let first = true;
    this.req = http.get(url, { agent: false }, (res) => {
      if (res.statusCode !== 200) {
        this.broken = true;
        res.resume();
        onSnapshot();
        return;
      }
      res.on('data', (chunk: Buffer) => {
        this.read(chunk.toString('latin1'));
        if (first && this.last >= 0) {
          first = false;
          onSnapshot();
        }
      });
      res.on('end', () => {
        if (this.closedReason === undefined) this.broken = true;
      });
    });
    this.req.on('error', () => {
      if (this.closedReason === undefined) this.broken = true;
      if (first) {
        first = false;
        onSnapshot();
      }
    });
  }

  close(): void {
    this.closedReason ??= 'by the bench';
    this.req?.destroy();
  }

  private read(text: string): void {
    const all = this.carry === '' ? text : this.carry + text;
    let start = 0;
    let end = all.indexOf('\n\n', start);
    const now = Date.now();
    while (end >= 0) {
      this.event(all, start, end, now);
      start = end + 2;
      end = all.indexOf('\n\n', start);
    }
    this.carry = start < all.length ? all.slice(start) : '';
  }

  /** One event: `id: N\nevent: TYPE\ndata: {...}` between start and end. */
  private event(s: string, start: number, end: number, now: number): void {
    if (!s.startsWith('id: ', start)) {
      // retry:, or the closed event (no id).
      if (s.startsWith('event: closed', start)) {
        const m = /"reason":"([a-z_]+)"/.exec(s.slice(start, end));
        this.closedReason = m?.[1] ?? 'closed';
      }
      return;
    }
    const nl = s.indexOf('\n', start);
    const id = Number(s.slice(start + 4, nl));
    const type = s.slice(nl + 8, s.indexOf('\n', nl + 1));
    if (type === 'level' || type === 'trade') {
      this.updates++;
      if (id !== this.last + 1) this.gaps++;
      this.last = id;
      if (this.sampled && type === 'level') {
        const at = s.indexOf('"time":"', nl);
        if (at >= 0 && at < end) this.fanOut.push(now - Date.parse(s.slice(at + 8, at + 32)));
      }
    } else this.last = id;
  }
}

let subscribers: Subscriber[] = [];
let fanOut: number[] = [];

process.on('message', (m: Command) => {
  if (m.cmd === 'open') {
    fanOut = [];
    let waiting = m.count;
    const opened = (): void => {
      if (--waiting === 0) process.send?.({ ok: 'opened' });
    };
    subscribers = Array.from({ length: m.count }, (_, i) => {
      const s = new Subscriber(i % m.sampleEvery === 0, fanOut);
      s.open(m.url, opened);
      return s;
    });
    return;
  }
  const closed: Record<string, number> = {};
  for (const s of subscribers) {
    if (s.closedReason !== undefined) closed[s.closedReason] = (closed[s.closedReason] ?? 0) + 1;
    s.close();
  }
  const seen: Seen = {
    subscribers: subscribers.length,
    updates: subscribers.reduce((a, s) => a + s.updates, 0),
    gaps: subscribers.reduce((a, s) => a + s.gaps, 0),
    closed,
    broken: subscribers.filter((s) => s.broken).length,
    fanOutMs: fanOut,
  };
  subscribers = [];
  process.send?.(seen);
});

process.on('disconnect', () => process.exit(0));
