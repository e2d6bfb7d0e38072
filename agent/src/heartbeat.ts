// The heartbeat (D29): every interval the health of every node goes to the
// exchange, whose answer says how the cluster's nodes stand (online,
// leased); the provisioner learns them (D31), and a seller round follows
// each answer, so it lists what that answer showed free. A lease that ended
// nudges a heartbeat sooner: its nodes show free, and are listed, without
// waiting for the schedule.

import type { Node } from '@gpux/proto';

import type { AgentStatus } from './agent-status.js';
import { isRefusedAsIs } from './exchange/exchange-client.js';
import type { ExchangeApi } from './exchange/exchange-client.js';
import { HEARTBEAT_GAP } from './exchange/paced-exchange.js';
import type { Logger } from './logger.js';
import type { Provisioner } from './provisioner/provisioner.js';
import type { NodesView, Seller } from './selling/seller.js';
import { Ticker } from './ticker.js';

export interface HeartbeatOptions {
  readonly clusterId: string;
  readonly exchange: ExchangeApi;
  readonly provisioner: Provisioner;
  readonly intervalMs: number;
  /** undefined: no seller rounds (the agent always has one; tests may not). */
  readonly seller: Seller | undefined;
  readonly logger: Logger;
}

export class Heartbeat {
  private readonly ticker: Ticker;
  private view: NodesView = { nodes: [], atMs: 0 };
  private lastBeat: AgentStatus['lastHeartbeat'];
  /** A seller round under way, and whether another was asked for meanwhile. */
  private selling: Promise<void> | undefined;
  private sellAgain = false;
  private stopped = false;

  constructor(private readonly o: HeartbeatOptions) {
    // Nudged runs (a lease ended) at most one more per interval than the
    // schedule: the exchange allows two heartbeats per declared interval.
    this.ticker = new Ticker(o.intervalMs, () => this.beat(), {
      minGapMs: o.intervalMs * HEARTBEAT_GAP,
    });
  }

  /** The cluster's nodes as the last answer (Attach or a heartbeat) showed them. */
  get nodes(): readonly Node[] {
    return this.view.nodes;
  }

  get last(): AgentStatus['lastHeartbeat'] {
    return this.lastBeat;
  }

  /** The nodes Attach answered with, sent at `sentAtMs`. */
  learn(nodes: readonly Node[], sentAtMs: number): void {
    this.view = { nodes, atMs: sentAtMs };
    this.o.provisioner.setClusterNodes(nodes.map((n) => n.hostname));
  }

  /** First heartbeat now, then every interval. */
  start(): void {
    this.ticker.start();
  }

  /** A heartbeat soon (a lease ended: its nodes are free again). */
  nudge(): void {
    this.ticker.nudge();
  }

  /** No more heartbeats or seller rounds; resolves when the ones under way have finished. */
  async stop(): Promise<void> {
    this.stopped = true;
    await this.ticker.stop();
    await this.selling;
  }

  private async beat(): Promise<void> {
    const sentAtMs = Date.now();
    let step: 'provisioner' | 'exchange' = 'provisioner';
    try {
      const health = await this.o.provisioner.health();
      step = 'exchange';
      const res = await this.o.exchange.heartbeat({ clusterId: this.o.clusterId, nodes: health });
      this.learn(res.nodes, sentAtMs);
      this.lastBeat = { atMs: Date.now(), ok: true };
    } catch (err) {
      const error = err instanceof Error ? err.message : String(err);
      this.lastBeat = { atMs: Date.now(), ok: false, error, failed: step };
      if (!isRefusedAsIs(err)) this.o.logger.warn({ err }, 'heartbeat failed');
      else if (!err.repeated) {
        // The next heartbeats are sent on schedule (fresh state, not this request again).
        this.o.logger.error({ err, refusal: err.details }, 'the exchange refused the heartbeat');
      }
      return;
    }
    this.sell();
  }

  /** A seller round on the answer just in, not waited for (a heartbeat never waits on sells). */
  private sell(): void {
    const seller = this.o.seller;
    if (seller === undefined || this.stopped) return;
    if (this.selling !== undefined) {
      this.sellAgain = true;
      return;
    }
    // The seller logs its own failures; a round never throws.
    this.selling = seller.tick(this.view).finally(() => {
      this.selling = undefined;
      if (this.sellAgain) {
        this.sellAgain = false;
        this.sell();
      }
    });
  }
}
