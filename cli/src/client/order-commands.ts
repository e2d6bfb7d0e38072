// `gpux buy|sell|orders|order|cancel` (docs/api/orders.md). A buy shows
// the estimate and asks before it spends (--yes skips; without a terminal
// to ask on, --yes is required); with --wait it follows the order and its
// leases until SSH answers (order-wait.ts).

import { randomUUID } from 'node:crypto';

import { every } from './api.js';
import type { Api, Body, Query, Schemas } from './api.js';
import { YES, byId, canAsk, confirmed, endpoint, given, json } from './command.js';
import type { Context, Input, Leaf, OptionSpec } from './command.js';
import { CliError, EXIT } from './exit.js';
import { HOURS_OPTION, INSTANCE, ZONE_OPTION, estimateQuery } from './market-commands.js';
import { answersSsh, waitForOrder } from './order-wait.js';
import type { Waited } from './order-wait.js';
import { PAGING, isoTime, paging, price, timeSpan, wholeNumber } from './parse.js';
import { money } from './output.js';
import { showEstimate } from './render-market.js';
import { showCancellation, showOrder, showOrders } from './render-orders.js';
import { connectLines } from './render-leases.js';

type Order = Schemas['Order'];
type CreateOrder = Body<'/v1/orders'>;

const ORDER_ID = ['<order-id>', 'the order (ord_…)'] as const;
const STATUSES = every<NonNullable<Query<'/v1/orders'>['status']>>()([
  'pending',
  'partial',
  'filled',
  'cancelled',
  'all',
]);

const START: OptionSpec = {
  flags: '--start <time>',
  description: 'when it may start filling, ISO 8601 with a zone (default now; at most 720 h ahead)',
  parse: isoTime,
};

/** The order of an instance, zone and hours (the fields buy and sell share), and the side's own. */
function orderBody(
  a: Input,
  side: 'buy' | 'sell',
  more: { [K in keyof CreateOrder]?: CreateOrder[K] | undefined },
): CreateOrder {
  const q = estimateQuery(a);
  return given<CreateOrder>({
    side,
    gpu_type: q.gpu_type,
    gpu_count: q.gpu_count,
    zone: q.zone,
    duration_hours: q.duration_hours,
    start_time: a.opt<string>('start'),
    ...more,
  });
}

/** POST /v1/orders once: a retry of this request replays its answer (Idempotency-Key). */
function place(api: Api, body: CreateOrder): Promise<Order> {
  return api.read(
    api.client.POST('/v1/orders', {
      body,
      params: { header: { 'Idempotency-Key': randomUUID() } },
    }),
  );
}

/** The lines that say how to cancel an order that was left resting. */
function restingLines(o: Order, why: string): string {
  return (
    `gpux: ${why}: order ${o.order_id} is left ${o.status} in the book ` +
    `(${o.filled_gpus} of ${o.gpu_count} GPUs filled); cancel it with: gpux cancel ${o.order_id}`
  );
}

/** The end of `buy --wait`: what to print, and the exit code. */
function finishWait(ctx: Context, w: Waited): void {
  ctx.io.out(
    ctx.json ? json(w.order) : showOrder(w.order, ctx.style) + connectLines(w.leases, w.ready),
  );
  const pending = w.leases.filter((l) => !w.ready.has(l.lease_id) && l.status !== 'failed');
  if (w.outcome !== 'ready') {
    const why = w.outcome === 'timeout' ? '--wait-timeout passed' : 'interrupted';
    const code = w.outcome === 'timeout' ? EXIT.waitTimeout : EXIT.interrupted;
    const lines: string[] = [];
    if (w.order.status === 'pending' || w.order.status === 'partial') {
      lines.push(restingLines(w.order, why));
    } else lines.push(`${why}`);
    for (const l of pending) {
      lines.push(`lease ${l.lease_id} is ${l.status}; follow it with: gpux lease ${l.lease_id}`);
    }
    throw new CliError(lines.join('\n').replace(/^gpux: /, ''), code);
  }
  const failed = w.leases.filter((l) => l.status === 'failed');
  if (w.leases.length === 0) {
    throw new CliError(
      `order ${w.order.order_id} ${w.order.status}` +
        `${w.order.cancel_reason ? ` (${w.order.cancel_reason})` : ''}: nothing was bought`,
      EXIT.conflict,
    );
  }
  if (failed.length > 0) {
    throw new CliError(
      failed.map((l) => `lease ${l.lease_id} failed to provision and was refunded`).join('\n'),
      EXIT.conflict,
    );
  }
}

async function follow(ctx: Context, api: Api, order: Order, timeoutMs: number): Promise<void> {
  const stop = new AbortController();
  const undo = ctx.io.onInterrupt(() => stop.abort());
  try {
    const w = await waitForOrder(order.order_id, ctx.io.now() + timeoutMs, stop.signal, {
      readOrder: (id) => api.read(api.client.GET('/v1/orders/{id}', byId(id))),
      readLease: (id) => api.read(api.client.GET('/v1/leases/{id}', byId(id))),
      answers: answersSsh,
      progress: (line) => ctx.io.err(`${line}\n`),
      sleep: (ms, signal) =>
        new Promise((resolve) => {
          const t = setTimeout(resolve, ms);
          signal.addEventListener('abort', () => (clearTimeout(t), resolve()), { once: true });
        }),
      now: () => ctx.io.now(),
    });
    finishWait(ctx, w);
  } finally {
    undo();
  }
}

const buy: Leaf = {
  kind: 'leaf',
  name: 'buy',
  args: [INSTANCE],
  summary: 'buy GPU time: shows the estimate and asks first; --wait: until SSH answers',
  example: 'gpux buy 8xh100 --zone us-west-1 --hours 2 --wait --yes',
  options: [
    ZONE_OPTION,
    HOURS_OPTION,
    {
      flags: '--max-price <dollars>',
      description: 'a limit order: at most this per GPU-hour; it rests in the book until it fills',
      parse: price,
    },
    { flags: '--partial', description: 'may fill in part (default: all or nothing)' },
    START,
    {
      flags: '--flexible <hours>',
      description: 'may fill any time up to this many hours after --start (1 to 720)',
      parse: wholeNumber(1, 720),
    },
    YES,
    { flags: '--wait', description: 'follow the order and its leases until SSH answers' },
    {
      flags: '--wait-timeout <time>',
      description: 'how long --wait follows it (90s, 10m, 2h; default 10m), then leaves it resting',
      parse: timeSpan,
    },
  ],
  async run(ctx, a) {
    canAsk(ctx, a, 'buy spends money');
    const api = ctx.api();
    const body = orderBody(a, 'buy', {
      limit_price: a.opt<number>('maxPrice'),
      allow_partial: a.opt<boolean>('partial'),
      flexible_window_hours: a.opt<number>('flexible'),
    });
    const estimate = await api.read(
      api.client.GET('/v1/prices/estimate', { params: { query: estimateQuery(a) } }),
    );
    ctx.io.err(showEstimate(estimate, ctx.style));
    if (body.limit_price !== undefined) {
      ctx.io.err(`limit     at most ${money(body.limit_price)}/GPU-h: rests until it fills\n`);
    }
    const what = `${body.gpu_count}x${body.gpu_type} in ${body.zone} for ${body.duration_hours} h`;
    if (!(await confirmed(ctx, a, `Buy ${what} for about ${money(estimate.total_cost)}?`))) return;
    const order = await place(api, body);
    if (a.opt<boolean>('wait') === true) {
      return follow(ctx, api, order, a.opt<number>('waitTimeout') ?? 600_000);
    }
    ctx.io.out(ctx.json ? json(order) : showOrder(order, ctx.style));
  },
};

const sell: Leaf = {
  kind: 'leaf',
  name: 'sell',
  args: [INSTANCE],
  summary: "providers: offer your cluster's nodes for a window at a price",
  example: 'gpux sell 16xh100 --zone us-west-1 --hours 48 --price 2.40',
  options: [
    ZONE_OPTION,
    { ...HOURS_OPTION, description: 'the window to lease in, from --start: 1 to 720 hours' },
    {
      flags: '--price <dollars>',
      description: 'the ask, per GPU-hour (whole cents)',
      parse: price,
      required: true,
    },
    START,
    {
      flags: '--cluster <cluster-id>',
      description: 'the cluster offering the nodes (needed when you have several there)',
    },
  ],
  async run(ctx, a) {
    const body = orderBody(a, 'sell', {
      limit_price: a.opt<number>('price'),
      cluster_id: a.opt<string>('cluster'),
    });
    const order = await place(ctx.api(), body);
    ctx.io.out(ctx.json ? json(order) : showOrder(order, ctx.style));
  },
};

const orders = endpoint({
  name: 'orders',
  summary: 'your orders, newest first',
  example: 'gpux orders --status pending',
  options: [
    {
      flags: '--status <status>',
      description: 'only these (default all)',
      choices: STATUSES,
    },
    { flags: '--side <side>', description: 'only buys or sells', choices: ['buy', 'sell'] },
    ...PAGING,
  ],
  call: (c, a) =>
    c.GET('/v1/orders', {
      params: {
        query: given<Query<'/v1/orders'>>({
          status: a.opt<Query<'/v1/orders'>['status']>('status'),
          side: a.opt<'buy' | 'sell'>('side'),
          ...paging(a),
        }),
      },
    }),
  show: showOrders,
});

const order = endpoint({
  name: 'order',
  args: [ORDER_ID],
  summary: 'one of your orders, with its fills and their leases',
  example: 'gpux order ord_1a2b3c',
  call: (c, a) => c.GET('/v1/orders/{id}', byId(a.arg(0))),
  show: (o, style) => showOrder(o, style),
});

const cancel = endpoint({
  name: 'cancel',
  args: [ORDER_ID],
  summary: 'cancel the unfilled part of an order',
  example: 'gpux cancel ord_1a2b3c',
  call: (c, a) => c.DELETE('/v1/orders/{id}', byId(a.arg(0))),
  show: showCancellation,
});

export const ORDER_COMMANDS: readonly Leaf[] = [buy, sell, orders, order, cancel];
