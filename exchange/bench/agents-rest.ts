// The customers' REST load of `npm run bench -- agents`: open loop at a fixed
// rate (request k of a phase is due at start + k / rate; latency counts from
// then, so a stall shows in every request that should have gone meanwhile),
// over the HTTP bench's lean keep-alive client (http-client.ts). Half the
// requests read a book (GET /v1/orderbook), a quarter ask for an estimate
// (GET /v1/prices/estimate), a quarter place an order (POST /v1/orders):
// the HTTP bench's seeded order schedule (http-workload.ts), limit orders
// only, sells on the REST sellers' clusters planned with room to spare.

import { performance } from 'node:perf_hooks';

import { GPUS_PER_NODE } from '@gpux/shared';

import type { LeanHttpClient } from './http-client.js';
import { BOOKS, BUY } from './http-workload.js';
import type { Schedule } from './http-workload.js';
import { Rng } from './order-stream.js';
import { Counter, summarize } from './stats.js';
import type { LatencySummary } from './stats.js';

/** Shares of the requests: book reads, estimates, the rest orders. */
export const READ_SHARE = 0.5;
export const ESTIMATE_SHARE = 0.25;
export const ORDER_SHARE = 1 - READ_SHARE - ESTIMATE_SHARE;

/** Answers still missing this long after a phase's last send count as timeouts. */
const STRAGGLER_TIMEOUT_MS = 30_000;

export interface RestParties {
  /** Buyers' and sellers' tokens (different organizations: no D17 self-trade). */
  readonly buyerTokens: readonly string[];
  readonly sellerTokens: readonly string[];
  /** Per planned cluster of the schedule: its id. */
  readonly clusterIds: readonly string[];
}

export interface RestResult {
  readonly latency: LatencySummary;
  readonly sent: number;
  /** 2xx answers by request kind. */
  readonly ok: Counter;
  /** Other answers by "kind status code" (4xx are shown, not counted as errors). */
  readonly refused: Counter;
  /** 5xx answers, transport failures and timeouts: the bench's errors. */
  readonly errors: Counter;
}

type Kind = 'book' | 'estimate' | 'order';

export class RestLoad {
  private readonly rng: Rng;
  private nextOrder = 0;
  private readonly buyerPost: string[];
  private readonly sellerPost: string[];

  constructor(
    private readonly client: LeanHttpClient,
    private readonly schedule: Schedule,
    private readonly parties: RestParties,
    private readonly rate: number,
    seed: number,
  ) {
    this.rng = new Rng(seed ^ 0x2545f491);
    const post = (t: string): string =>
      client.head('POST', '/v1/orders', {
        authorization: `Bearer ${t}`,
        'content-type': 'application/json',
      });
    this.buyerPost = parties.buyerTokens.map(post);
    this.sellerPost = parties.sellerTokens.map(post);
  }

  /** Orders the schedule has left (each phase uses some). */
  get ordersLeft(): number {
    return this.schedule.length - this.nextOrder;
  }

  /** The request of one send: its kind, head and body. */
  private next(): { kind: Kind; head: string; body: string } {
    const u = this.rng.next();
    const buyer = this.rng.int(0, this.parties.buyerTokens.length - 1);
    if (u < ORDER_SHARE && this.nextOrder < this.schedule.length) {
      return { kind: 'order', ...this.order(this.nextOrder++) };
    }
    const book = BOOKS[this.rng.int(0, BOOKS.length - 1)] ?? BOOKS[0];
    if (book === undefined) throw new Error('no books');
    const auth = { authorization: `Bearer ${this.parties.buyerTokens[buyer] ?? ''}` };
    const q = `gpu_type=${book.gpuType}&zone=${book.zone}`;
    if (u < ORDER_SHARE + ESTIMATE_SHARE) {
      const hours = this.rng.int(1, 24);
      const path = `/v1/prices/estimate?${q}&gpu_count=${GPUS_PER_NODE}&duration_hours=${hours}`;
      return { kind: 'estimate', head: this.client.head('GET', path, auth), body: '' };
    }
    return { kind: 'book', head: this.client.head('GET', `/v1/orderbook?${q}`, auth), body: '' };
  }

  /** Order i of the schedule, as a limit order (no market buys: no insufficient_liquidity). */
  private order(i: number): { head: string; body: string } {
    const s = this.schedule;
    const spec = BOOKS[s.book[i] ?? 0] ?? BOOKS[0];
    if (spec === undefined) throw new Error('no books');
    const buy = s.side[i] === BUY;
    const away = s.offset[i] ?? 1;
    const crossing = s.crossing[i] === 1;
    const order: Record<string, unknown> = {
      side: buy ? 'buy' : 'sell',
      gpu_type: spec.gpuType,
      zone: spec.zone,
      gpu_count: (s.nodes[i] ?? 1) * GPUS_PER_NODE,
      duration_hours: s.hours[i] ?? 1,
    };
    const party = s.party[i] ?? 0;
    if (buy) {
      // Crossing buys bid above the mid (where the asks rest), the others below it.
      order['limit_price'] = (crossing ? spec.midCents + away : spec.midCents - away) / 100;
      if (s.partial[i] === 1) order['allow_partial'] = true;
      const head = this.buyerPost[party % this.buyerPost.length] ?? '';
      return { head, body: JSON.stringify(order) };
    }
    order['limit_price'] = (crossing ? spec.midCents - away : spec.midCents + away) / 100;
    order['cluster_id'] = this.parties.clusterIds[s.cluster[i] ?? 0];
    return { head: this.sellerPost[party] ?? '', body: JSON.stringify(order) };
  }

  /**
   * One phase of `seconds` at the load's rate. `during` runs once the first
   * request is due (a flood fired into the phase), and is awaited too.
   */
  async run(seconds: number, during?: () => Promise<void>): Promise<RestResult> {
    const n = Math.max(1, Math.round(this.rate * seconds));
    const latNs = new Float64Array(n);
    const ok = new Counter();
    const refused = new Counter();
    const errors = new Counter();
    const interval = 1000 / this.rate;
    const start = performance.now() + 10;
    let answered = 0;
    let timedOut = false;
    const side = during === undefined ? Promise.resolve() : during();

    await new Promise<void>((resolve) => {
      let sent = 0;
      const one = async (k: number, due: number): Promise<void> => {
        const { kind, head, body } = this.next();
        let code = 0;
        let failure = '';
        try {
          code = (await this.client.request(head, body)).status;
        } catch (err) {
          failure = `${kind} transport ${(err as { code?: string }).code ?? (err as Error).name}`;
        }
        if (timedOut) return;
        latNs[k] = (performance.now() - due) * 1e6;
        if (failure !== '') errors.add(failure);
        else if (code >= 500) errors.add(`${kind} ${code}`);
        else if (code >= 400) refused.add(`${kind} ${code}`);
        else ok.add(kind);
        if (++answered === n) resolve();
      };
      const pump = (): void => {
        const now = performance.now();
        while (sent < n && start + sent * interval <= now) {
          void one(sent, start + sent * interval);
          sent++;
        }
        if (sent < n) {
          setTimeout(pump, Math.max(0, start + sent * interval - performance.now()));
          return;
        }
        setTimeout(() => {
          if (answered === n) return;
          timedOut = true;
          for (let k = 0; k < n; k++) {
            if (latNs[k] === 0) {
              latNs[k] = (performance.now() - (start + k * interval)) * 1e6;
              errors.add('timeout');
            }
          }
          resolve();
        }, STRAGGLER_TIMEOUT_MS).unref();
      };
      setTimeout(pump, 10);
    });
    await side;
    return { latency: summarize(latNs), sent: n, ok, refused, errors };
  }
}
