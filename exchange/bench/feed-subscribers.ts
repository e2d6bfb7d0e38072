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
// clock, in ms). Parsing is kept lean: the bytes are scanned as they came,
// and only sampled subscribers turn a field of the JSON into text.

import { connect } from 'node:net';
import type { Socket } from 'node:net';

export interface Seen {
  /** This process's CPU from opening to closing, % of one core. */
  readonly cpuPercent: number;
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

const ID = Buffer.from('id: ');
const BLANK = Buffer.from('\n\n');
const CLOSED = Buffer.from('event: closed');
const TIME = Buffer.from('"time":"');
const NL = 10;
/** The first letter of the event types (after `event: `). */
const LEVEL = 'l'.charCodeAt(0);
const TRADE = 't'.charCodeAt(0);

class Subscriber {
  last = -1;
  updates = 0;
  gaps = 0;
  closedReason: string | undefined;
  broken = false;
  /** The bytes of an event not yet complete. */
  private carry: Buffer | undefined;
  private socket: Socket | undefined;

  constructor(
    private readonly sampled: boolean,
    private readonly fanOut: number[],
  ) {}

  /**
   * Opens the stream on a socket of its own and reads the answer as bytes,
   * without an HTTP parser: after the head, the chunked body's size lines
   * fall between whole events and match nothing the scan looks for.
   */
  open(url: URL, onSnapshot: () => void): void {
    let first = true;
    let head = true;
    const opened = (): void => {
      if (!first) return;
      first = false;
      onSnapshot();
    };
    const socket = connect(Number(url.port), url.hostname);
    this.socket = socket;
    socket.write(`GET ${url.pathname}${url.search} HTTP/1.1\r\nHost: ${url.host}\r\n\r\n`);
    socket.on('data', (chunk: Buffer) => {
      if (head) {
        head = false;
        if (!chunk.subarray(0, 12).toString('latin1').startsWith('HTTP/1.1 200')) {
          this.broken = true;
          socket.destroy();
          opened();
          return;
        }
      }
      this.read(chunk);
      if (this.last >= 0) opened();
    });
    socket.on('close', () => {
      if (this.closedReason === undefined) this.broken = true;
      opened();
    });
    socket.on('error', () => undefined);
  }

  close(): void {
    this.closedReason ??= 'by the bench';
    this.socket?.destroy();
  }

  /** Scans the complete events of what arrived, as bytes: no text is made but what is sampled. */
  private read(chunk: Buffer): void {
    const buf = this.carry === undefined ? chunk : Buffer.concat([this.carry, chunk]);
    const end = buf.lastIndexOf(BLANK);
    if (end < 0) {
      this.carry = buf;
      return;
    }
    this.carry = end + 2 < buf.length ? buf.subarray(end + 2) : undefined;
    const now = this.sampled ? Date.now() : 0;
    let at = buf.indexOf(ID);
    while (at >= 0 && at < end) {
      // `id: N\nevent: TYPE\n`
      let id = 0;
      let i = at + 4;
      for (let c = buf[i] ?? NL; c !== NL; c = buf[++i] ?? NL) id = id * 10 + (c - 48);
      const type = buf[i + 8];
      if (type === LEVEL || type === TRADE) {
        this.updates++;
        if (id !== this.last + 1) this.gaps++;
        if (this.sampled && type === LEVEL) {
          const t = buf.indexOf(TIME, i);
          if (t >= 0) this.fanOut.push(now - Date.parse(buf.toString('latin1', t + 8, t + 32)));
        }
      }
      this.last = id;
      at = buf.indexOf(ID, i);
    }
    if (buf.indexOf(CLOSED) >= 0) {
      const m = /"reason":"([a-z_]+)"/.exec(buf.toString('latin1'));
      this.closedReason = m?.[1] ?? 'closed';
    }
  }
}

let subscribers: Subscriber[] = [];
let fanOut: number[] = [];
let cpu0 = process.cpuUsage();
let wall0 = performance.now();

process.on('message', (m: Command) => {
  if (m.cmd === 'open') {
    fanOut = [];
    cpu0 = process.cpuUsage();
    wall0 = performance.now();
    let waiting = m.count;
    const opened = (): void => {
      if (--waiting === 0) process.send?.({ ok: 'opened' });
    };
    subscribers = Array.from({ length: m.count }, (_, i) => {
      const s = new Subscriber(i % m.sampleEvery === 0, fanOut);
      s.open(new URL(m.url), opened);
      return s;
    });
    return;
  }
  const closed: Record<string, number> = {};
  for (const s of subscribers) {
    if (s.closedReason !== undefined) closed[s.closedReason] = (closed[s.closedReason] ?? 0) + 1;
    s.close();
  }
  const used = process.cpuUsage(cpu0);
  const seen: Seen = {
    cpuPercent: ((used.user + used.system) / 1000 / (performance.now() - wall0)) * 100,
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
