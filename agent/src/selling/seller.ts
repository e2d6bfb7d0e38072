// Keeps the cluster's free nodes listed at the agent's ask (sell-plan.ts),
// once per heartbeat. A refusal of the book (price collar D15, minimum
// value D16, capacity D31) is logged, kept for the agent's status, and
// tried again at the next heartbeat. A request the exchange refuses as
// invalid is not sent again unchanged (paced-exchange.ts): logged once, it
// stays in the status until a round succeeds.

import type { Refusal } from '@gpux/proto';

import { isRefusedAsIs } from '../exchange/exchange-client.js';
import type { ExchangeApi } from '../exchange/exchange-client.js';
import type { Logger } from '../logger.js';
import { planSells } from './sell-plan.js';
import type { NodeView } from './sell-plan.js';

export interface SellerStatus {
  readonly askCents: number;
  /** Nodes offered by open sells after the last round. */
  readonly listedNodes: number;
  readonly freeNodes: number;
  /** The last refusal of the exchange, until a sell is taken again. */
  readonly refusal: (Refusal & { readonly atMs: number }) | undefined;
  /** The last round that failed (exchange unreachable), until one succeeds. */
  readonly error: string | undefined;
}

export interface SellerOptions {
  readonly clusterId: string;
  readonly exchange: ExchangeApi;
  readonly askCents: number;
  readonly listHours: number;
  readonly renewBeforeMs: number;
  readonly logger: Logger;
  readonly now?: () => number;
}

export class Seller {
  private state: SellerStatus;
  private readonly now: () => number;

  constructor(private readonly o: SellerOptions) {
    this.now = o.now ?? Date.now;
    this.state = {
      askCents: o.askCents,
      listedNodes: 0,
      freeNodes: 0,
      refusal: undefined,
      error: undefined,
    };
  }

  get status(): SellerStatus {
    return this.state;
  }

  /** One round against the nodes as the last heartbeat answer showed them. */
  async tick(nodes: readonly NodeView[]): Promise<void> {
    try {
      await this.round(nodes);
      this.state = { ...this.state, error: undefined };
    } catch (err) {
      const error = err instanceof Error ? err.message : String(err);
      if (!isRefusedAsIs(err)) {
        this.o.logger.warn(
          { err },
          'listing free nodes failed; trying again at the next heartbeat',
        );
      } else if (!err.repeated) {
        this.o.logger.error(
          { err, refusal: err.details, askCents: this.o.askCents },
          'the exchange refused a sell request; it is not sent again as is',
        );
      }
      this.state = { ...this.state, error };
    }
  }

  private async round(nodes: readonly NodeView[]): Promise<void> {
    const { orders } = await this.o.exchange.listSells(this.o.clusterId);
    const plan = planSells({
      nodes,
      sells: orders.map((s) => ({
        orderId: s.orderId,
        priceCents: s.priceCents,
        remainingNodes: s.remainingNodes,
        expiresAtMs: s.expiresAt?.getTime(),
      })),
      askCents: this.o.askCents,
      nowMs: this.now(),
      renewBeforeMs: this.o.renewBeforeMs,
    });
    let listed = orders
      .filter((s) => !plan.withdraw.includes(s.orderId))
      .reduce((sum, s) => sum + s.remainingNodes, 0);
    for (const orderId of plan.withdraw) {
      const { cancelledNodes } = await this.o.exchange.withdrawSell(this.o.clusterId, orderId);
      this.o.logger.info(
        { orderId, cancelledNodes },
        'sell withdrawn (renewed, repriced or surplus)',
      );
    }
    for (let i = 0; i < plan.publish; i++) {
      const res = await this.o.exchange.publishSell({
        clusterId: this.o.clusterId,
        nodes: 1,
        priceCents: this.o.askCents,
        windowHours: this.o.listHours,
      });
      if (res.result?.$case === 'refusal') {
        const refusal = { ...res.result.value, atMs: this.now() };
        this.o.logger.warn(
          { code: refusal.code, message: refusal.message, askCents: this.o.askCents },
          'the exchange refused the sell; trying again at the next heartbeat',
        );
        this.state = { ...this.state, refusal };
        break;
      }
      if (res.result?.$case === 'order') {
        listed += res.result.value.remainingNodes;
        this.o.logger.info(
          { orderId: res.result.value.orderId, priceCents: this.o.askCents },
          'free node listed',
        );
        this.state = { ...this.state, refusal: undefined };
      }
    }
    this.state = { ...this.state, listedNodes: listed, freeNodes: plan.free };
  }
}
