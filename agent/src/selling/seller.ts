// Keeps the cluster's free nodes listed at the agent's ask (sell-plan.ts),
// a round after each heartbeat the exchange answered. Without an ask
// (GPUX_ASK_PRICE unset) it lists none and withdraws, at each round, the
// open sells it listed itself (remembered in the state directory,
// state/own-sells.ts), so an agent restarted without a price leaves none of
// its sells behind (issue 23); sells of the cluster listed by other means
// (`gpux sell`) are left alone. Nodes it knows are
// leased are not offered even while the last heartbeat answer still shows
// them free: those of leases it was told to provision, and those of its
// sells filled since that answer (a sell open at the last round and
// smaller now); the exchange would refuse them (D31: no free capacity). A
// refusal of the book (price collar D15, minimum value D16, capacity D31,
// the cluster cordoned by the exchange's operators or its provider) is kept for the agent's
// status and tried again at the next heartbeat, one sell a round; it is
// logged when it is not the refusal already kept, so one that lasts (a
// cordon) is logged once, and the sells taken again after it once. A
// request the exchange refuses as invalid is not sent again unchanged
// (paced-exchange.ts): logged once, it stays in the status until a round
// succeeds.

import type { Node, Refusal } from '@gpux/proto';
import type { ErrorCode } from '@gpux/shared';

import { isRefusedAsIs } from '../exchange/exchange-client.js';
import type { ExchangeApi } from '../exchange/exchange-client.js';
import type { Logger } from '../logger.js';
import type { OwnSells } from '../state/own-sells.js';
import { planSells } from './sell-plan.js';

/** The exchange's refusal of a sell while the cluster is cordoned (docs/api/admin.md, docs/api/accounts.md). */
export const CLUSTER_CORDONED: ErrorCode = 'cluster_cordoned';

/** The cluster's nodes as a heartbeat answer showed them, and when it came. */
export interface NodesView {
  readonly nodes: readonly Node[];
  readonly atMs: number;
}

export interface SellerStatus {
  /** null: GPUX_ASK_PRICE unset; the agent does not sell and withdraws the sells it listed. */
  readonly askCents: number | null;
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
  /** undefined: not selling (GPUX_ASK_PRICE unset): the agent's own open sells are withdrawn. */
  readonly askCents: number | undefined;
  /** The sells this agent listed (across restarts). */
  readonly ownSells: OwnSells;
  readonly listHours: number;
  readonly renewBeforeMs: number;
  /** Hostnames of the leases the agent holds (provisioning or provisioned). */
  readonly leasedHostnames: () => ReadonlySet<string>;
  readonly logger: Logger;
  readonly now?: () => number;
}

export class Seller {
  private state: SellerStatus;
  private readonly now: () => number;
  /** Our open sells after the last round (order id → nodes left); undefined: not known. */
  private lastOpen: Map<string, number> | undefined;
  /** Nodes of sells filled since a round, until a heartbeat answer newer than that shows them. */
  private filled: { readonly nodes: number; readonly noticedAtMs: number }[] = [];

  constructor(private readonly o: SellerOptions) {
    this.now = o.now ?? Date.now;
    this.state = {
      askCents: o.askCents ?? null,
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
  async tick(view: NodesView): Promise<void> {
    try {
      await this.round(view);
      this.state = { ...this.state, error: undefined };
    } catch (err) {
      this.lastOpen = undefined;
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

  private async round(view: NodesView): Promise<void> {
    const listedAtMs = this.now();
    const { orders } = await this.o.exchange.listSells(this.o.clusterId);
    await this.o.ownSells.keepOnly(new Set(orders.map((s) => s.orderId)));
    this.noticeFills(orders, listedAtMs);
    // A heartbeat answered after a fill was noticed shows its nodes leased already.
    this.filled = this.filled.filter((f) => f.noticedAtMs >= view.atMs);
    const leased = this.o.leasedHostnames();
    const shownFreeButLeased = view.nodes.filter(
      (n) => n.leaseId === '' && leased.has(n.hostname),
    ).length;
    const plan = planSells({
      nodes: view.nodes,
      knownLeased: shownFreeButLeased + this.filled.reduce((sum, f) => sum + f.nodes, 0),
      // Without a price, only the agent's own sells are its to withdraw.
      sells: orders
        .filter((s) => this.o.askCents !== undefined || this.o.ownSells.has(s.orderId))
        .map((s) => ({
          orderId: s.orderId,
          priceCents: s.priceCents,
          remainingNodes: s.remainingNodes,
          expiresAtMs: s.expiresAt?.getTime(),
        })),
      askCents: this.o.askCents,
      nowMs: this.now(),
      renewBeforeMs: this.o.renewBeforeMs,
    });
    const open = new Map(orders.map((s) => [s.orderId, s.remainingNodes]));
    this.lastOpen = open;
    let listed = orders
      .filter((s) => !plan.withdraw.includes(s.orderId))
      .reduce((sum, s) => sum + s.remainingNodes, 0);
    for (const orderId of plan.withdraw) {
      // Gone from the book by our hand, not filled.
      open.delete(orderId);
      const { cancelledNodes } = await this.o.exchange.withdrawSell(this.o.clusterId, orderId);
      this.o.logger.info(
        { orderId, cancelledNodes },
        this.o.askCents === undefined
          ? 'sell withdrawn (GPUX_ASK_PRICE unset: the agent does not sell)'
          : 'sell withdrawn (renewed, repriced or surplus)',
      );
    }
    for (let i = 0; i < plan.publish; i++) {
      const priceCents = this.o.askCents;
      // No ask: the plan publishes nothing.
      if (priceCents === undefined) break;
      const res = await this.o.exchange.publishSell({
        clusterId: this.o.clusterId,
        nodes: 1,
        priceCents,
        windowHours: this.o.listHours,
      });
      if (res.result?.$case === 'refusal') {
        this.refused(res.result.value);
        break;
      }
      if (res.result?.$case === 'order') {
        await this.o.ownSells.add(res.result.value.orderId);
        listed += res.result.value.remainingNodes;
        open.set(res.result.value.orderId, res.result.value.remainingNodes);
        const was = this.state.refusal;
        if (was !== undefined) {
          this.o.logger.info({ refusedBefore: was.code }, 'the exchange takes the sells again');
        }
        this.o.logger.info(
          { orderId: res.result.value.orderId, priceCents: this.o.askCents },
          'free node listed',
        );
        this.state = { ...this.state, refusal: undefined };
      }
    }
    this.state = { ...this.state, listedNodes: listed, freeNodes: plan.free };
  }

  /** A refusal of the book: kept for the status; logged unless it is the one kept already. */
  private refused(r: Refusal): void {
    const kept = this.state.refusal;
    this.state = { ...this.state, refusal: { ...r, atMs: this.now() } };
    if (kept?.code === r.code && kept.message === r.message) return;
    const fields = { code: r.code, message: r.message, askCents: this.o.askCents };
    if (r.code === CLUSTER_CORDONED) {
      this.o.logger.info(
        fields,
        'the cluster is cordoned (by the exchange’s operators or its provider): no node is listed until the cordon is lifted (asked again at each heartbeat)',
      );
    } else {
      this.o.logger.warn(
        fields,
        'the exchange refused the sell; trying again at the next heartbeat',
      );
    }
  }

  /** Nodes our sells offered at the last round and offer no more: filled since. */
  private noticeFills(
    orders: readonly { orderId: string; remainingNodes: number }[],
    atMs: number,
  ): void {
    if (this.lastOpen === undefined) return;
    const now = new Map(orders.map((s) => [s.orderId, s.remainingNodes]));
    let taken = 0;
    for (const [orderId, before] of this.lastOpen) {
      taken += Math.max(0, before - (now.get(orderId) ?? 0));
    }
    if (taken > 0) this.filled.push({ nodes: taken, noticedAtMs: atMs });
  }
}
