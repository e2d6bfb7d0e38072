// The event bus of `gpux start` (D34: NATS_URL unset): the exchange's outbox
// relay and the simulated agent in one process, with the semantics the agent
// relies on from JetStream, so the same code runs on both: a stream of
// messages deduplicated by message id, durable consumers with one filter
// subject each that start from the first message, explicit acks, and
// redelivery of what is not acked in time (in any order, as JetStream).
// It keeps nothing across restarts: the agent's reconciliation (D30) covers
// what an in-process bus loses with its process.

export interface BusMessage {
  readonly subject: string;
  /** The publisher's message id (the event id). */
  readonly id: string;
  readonly data: string;
  /** 1 on first delivery. */
  readonly deliveryCount: number;
  /** Done: never delivered again. */
  ack(): void;
  /** Not done: delivered again after `delayMs` (default: at once). */
  nak(delayMs?: number): void;
}

export interface BusConsumerOptions {
  /** NATS subject syntax: `*` one token, `>` the rest. */
  readonly filterSubject: string;
  /** A delivered message not acked within this is delivered again. */
  readonly ackWaitMs?: number;
}

interface Stored {
  readonly seq: number;
  readonly subject: string;
  readonly id: string;
  readonly data: string;
}

interface Pending {
  readonly msg: Stored;
  deliveries: number;
  /** When it may be delivered (again). */
  dueAt: number;
  inFlight: boolean;
}

/** `gpux.cluster.*.lease.>` matches `gpux.cluster.c1.lease.revoke`. */
export function subjectMatches(filter: string, subject: string): boolean {
  const f = filter.split('.');
  const s = subject.split('.');
  for (let i = 0; i < f.length; i++) {
    if (f[i] === '>') return s.length > i;
    if (i >= s.length) return false;
    if (f[i] !== '*' && f[i] !== s[i]) return false;
  }
  return f.length === s.length;
}

/** A token of a filter that is a wildcard (`a*b` is no wildcard: only whole tokens are). */
const isWildcard = (token: string): boolean => token === '*' || token === '>';

/**
 * The literal tokens a filter starts with, before its first wildcard (all of
 * them for an exact subject): every subject it matches starts with them.
 */
function literalHead(filter: string): { readonly tokens: number; readonly head: string } {
  const f = filter.split('.');
  const wild = f.findIndex(isWildcard);
  const tokens = wild < 0 ? f.length : wild;
  return { tokens, head: f.slice(0, tokens).join('.') };
}

/** subjectMatches(filter, ·), with the filter read once and its common forms compared as strings. */
function matcherOf(filter: string): (subject: string) => boolean {
  const f = filter.split('.');
  const wild = f.findIndex(isWildcard);
  if (wild < 0) return (subject) => subject === filter;
  if (wild === f.length - 1 && f[wild] === '>') {
    // `a.b.>`: a subject of at least one token after `a.b` is one starting with `a.b.`.
    const head = filter.slice(0, -1);
    return (subject) => subject.startsWith(head);
  }
  return (subject) => subjectMatches(filter, subject);
}

export class BusConsumer {
  private readonly pending = new Map<number, Pending>();
  private handler: ((m: BusMessage) => void) | undefined;
  private timer: NodeJS.Timeout | undefined;
  private readonly ackWaitMs: number;
  private readonly matches: (subject: string) => boolean;

  constructor(
    readonly name: string,
    readonly filterSubject: string,
    ackWaitMs: number,
  ) {
    this.ackWaitMs = ackWaitMs;
    this.matches = matcherOf(filterSubject);
  }

  /** The bus hands it every new message of the stream its filter may match. */
  offer(msg: Stored): void {
    if (!this.matches(msg.subject)) return;
    this.pending.set(msg.seq, { msg, deliveries: 0, dueAt: 0, inFlight: false });
    this.pump();
  }

  /** Deliver to `handler` from now on (one handler at a time; a new one replaces it). */
  consume(handler: (m: BusMessage) => void): { stop(): void } {
    this.handler = handler;
    this.pump();
    return {
      stop: () => {
        if (this.handler === handler) this.handler = undefined;
        // What was in flight is delivered again to the next handler.
        for (const p of this.pending.values()) p.inFlight = false;
      },
    };
  }

  /** Messages not acked yet. */
  get unacked(): number {
    return this.pending.size;
  }

  private pump(): void {
    const handler = this.handler;
    if (handler === undefined) return;
    const now = Date.now();
    let next = Infinity;
    for (const p of this.pending.values()) {
      if (p.inFlight) {
        if (p.dueAt <= now) p.inFlight = false;
        else {
          next = Math.min(next, p.dueAt);
          continue;
        }
      }
      if (p.dueAt > now) {
        next = Math.min(next, p.dueAt);
        continue;
      }
      p.deliveries++;
      p.inFlight = true;
      p.dueAt = now + this.ackWaitMs;
      next = Math.min(next, p.dueAt);
      const seq = p.msg.seq;
      const message: BusMessage = {
        subject: p.msg.subject,
        id: p.msg.id,
        data: p.msg.data,
        deliveryCount: p.deliveries,
        ack: () => {
          this.pending.delete(seq);
        },
        nak: (delayMs = 0) => {
          const q = this.pending.get(seq);
          if (q === undefined) return;
          q.inFlight = false;
          q.dueAt = Date.now() + delayMs;
          this.schedule(q.dueAt);
        },
      };
      // Asynchronously, as a network delivery would be: a handler that acks
      // or publishes at once must not re-enter this loop.
      queueMicrotask(() => handler(message));
    }
    if (next !== Infinity) this.schedule(next);
  }

  private schedule(at: number): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = setTimeout(
      () => {
        this.timer = undefined;
        this.pump();
      },
      Math.max(0, at - Date.now()),
    );
    this.timer.unref();
  }

  close(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.handler = undefined;
  }
}

export class InProcessBus {
  private seq = 0;
  /** Message ids seen, for deduplication (JetStream's duplicate window). */
  private readonly seen = new Set<string>();
  private readonly retained: Stored[] = [];
  private readonly consumers = new Map<string, BusConsumer>();
  /**
   * The consumers by their filter's literal head (literalHead): per number
   * of tokens, per head, in creation order. A publish looks up its subject's
   * first n tokens for each n here instead of asking every consumer (5,000
   * agents' `gpux.cluster.<id>.>` each cost every event a walk of them all);
   * only filters starting with a wildcard are under 0 tokens, asked always.
   */
  private readonly byHead = new Map<number, Map<string, BusConsumer[]>>();
  /** byHead's numbers of tokens, ascending. */
  private headTokens: number[] = [];
  /** Creation order of the consumers: the order a message is offered to them in. */
  private readonly order = new Map<BusConsumer, number>();

  /** `retain`: the newest messages kept for consumers made later, and for deduplication. */
  constructor(private readonly retain = 100_000) {}

  /** Store a message; `duplicate` when its id was published before. */
  publish(subject: string, id: string, data: string): { seq: number; duplicate: boolean } {
    if (this.seen.has(id)) return { seq: 0, duplicate: true };
    this.seen.add(id);
    const msg: Stored = { seq: ++this.seq, subject, id, data };
    this.retained.push(msg);
    // The oldest go a tenth at a time, not one per publish: a splice at the
    // front moves the whole array, which at the limit cost every publish
    // O(retain). Between drops the bus keeps up to 10 % more.
    if (this.retained.length > this.retain + Math.ceil(this.retain / 10)) {
      const dropped = this.retained.splice(0, this.retained.length - this.retain);
      for (const d of dropped) this.seen.delete(d.id);
    }
    for (const c of this.candidates(subject)) c.offer(msg);
    return { seq: msg.seq, duplicate: false };
  }

  /** Every consumer whose filter may match `subject` (each once), in creation order. */
  private candidates(subject: string): readonly BusConsumer[] {
    let found: BusConsumer[] | undefined;
    let lists = 0;
    // `end`: where the subject's first `tokens` tokens end.
    let tokens = 0;
    let end = 0;
    for (const n of this.headTokens) {
      for (; tokens < n; tokens++) {
        if (tokens > 0 && end === subject.length) return this.inOrder(found, lists);
        const dot = subject.indexOf('.', tokens === 0 ? 0 : end + 1);
        end = dot < 0 ? subject.length : dot;
      }
      const list = this.byHead.get(n)?.get(subject.slice(0, end));
      if (list === undefined) continue;
      found = found === undefined ? list : [...found, ...list];
      lists++;
    }
    return this.inOrder(found, lists);
  }

  private inOrder(found: BusConsumer[] | undefined, lists: number): readonly BusConsumer[] {
    if (found === undefined) return [];
    if (lists > 1) found.sort((a, b) => (this.order.get(a) ?? 0) - (this.order.get(b) ?? 0));
    return found;
  }

  /**
   * The durable consumer `name`, created on first use with every retained
   * message its filter matches (JetStream's deliver policy "all").
   */
  consumer(name: string, options: BusConsumerOptions): BusConsumer {
    let c = this.consumers.get(name);
    if (c === undefined) {
      c = new BusConsumer(name, options.filterSubject, options.ackWaitMs ?? 30_000);
      this.consumers.set(name, c);
      this.order.set(c, this.order.size);
      const { tokens, head } = literalHead(options.filterSubject);
      let heads = this.byHead.get(tokens);
      if (heads === undefined) {
        heads = new Map();
        this.byHead.set(tokens, heads);
        this.headTokens = [...this.byHead.keys()].sort((a, b) => a - b);
      }
      const list = heads.get(head);
      if (list === undefined) heads.set(head, [c]);
      else list.push(c);
      for (const msg of this.retained) c.offer(msg);
    }
    return c;
  }

  close(): void {
    for (const c of this.consumers.values()) c.close();
  }
}
