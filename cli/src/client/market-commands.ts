// `gpux book|trades|quote`: the market as a customer reads it
// (docs/api/market-data.md): a book as a table and a depth chart, followed
// live from the feed with --watch; the recent trades; what a buy would pay.

import { BOOK, GPU_TYPES, ZONES } from './admin-market.js';
import type { Query, Schemas } from './api.js';
import { endpoint, given, json, untilInterrupted } from './command.js';
import type { Context, Input, Leaf, OptionSpec } from './command.js';
import { followBook, sseEvents, viewOf } from './book-feed.js';
import type { FeedEvent } from './book-feed.js';
import { apiError, networkError } from './exit.js';
import { PAGING, instanceOf, paging, wholeNumber } from './parse.js';
import type { Instance } from './parse.js';
import { showBook, showEstimate, showOrderBook, showTrades } from './render-market.js';

type GpuType = Schemas['OrderBook']['gpu_type'];
type Zone = Schemas['OrderBook']['zone'];

/** The book named by a leaf's first two arguments (GPU type, zone). */
export function bookOf(a: Input): { gpu_type: GpuType; zone: Zone } {
  return { gpu_type: a.value<GpuType>(0), zone: a.value<Zone>(1) };
}

/** `16xh100`: the instance argument of quote, buy and sell. */
export const INSTANCE = [
  '<instance>',
  `<gpus>x<gpu type>: whole nodes of 8 GPUs of ${GPU_TYPES.join(', ')} (8xh100, 16xb200)`,
  instanceOf(GPU_TYPES),
] as const;

export const ZONE_OPTION: OptionSpec = {
  flags: '--zone <zone>',
  description: 'where',
  choices: ZONES,
  required: true,
};

export const HOURS_OPTION: OptionSpec = {
  flags: '--hours <hours>',
  description: 'how long, 1 to 720 hours',
  parse: wholeNumber(1, 720),
  required: true,
};

/** The estimate query of an instance, zone and hours. */
export function estimateQuery(a: Input): Query<'/v1/prices/estimate'> {
  const instance = a.value<Instance>(0);
  return {
    gpu_type: instance.gpuType as GpuType,
    gpu_count: instance.gpus,
    zone: a.opt<Zone>('zone') as Zone,
    duration_hours: a.opt<number>('hours') as number,
  };
}

const DEPTH: OptionSpec = {
  flags: '--depth <n>',
  description: 'price levels a side (1 to 50; default 10)',
  parse: wholeNumber(1, 50),
};

/** Opens GET /v1/stream of a book; resumes after `lastId` when given. */
function openStream(ctx: Context, query: string, signal: AbortSignal) {
  const url = ctx.api().url;
  const doFetch = ctx.io.fetch ?? ((r: Request) => fetch(r));
  return async (lastId: number | undefined): Promise<AsyncIterable<FeedEvent>> => {
    const headers: Record<string, string> = { accept: 'text/event-stream' };
    if (lastId !== undefined) headers['last-event-id'] = String(lastId);
    let response: Response;
    try {
      response = await doFetch(new Request(`${url}/v1/stream?${query}`, { headers, signal }));
    } catch (e) {
      throw networkError(url, e);
    }
    if (!response.ok || response.body === null) {
      const text = await response.text();
      let body: unknown = text;
      try {
        body = JSON.parse(text);
      } catch {
        // not JSON: the text is the message
      }
      throw apiError(response.status, body, response.headers.get('retry-after'));
    }
    return sseEvents(response.body);
  };
}

/** --watch: the book redrawn at each change (one JSON line per event with --json), until Ctrl-C. */
function watch(ctx: Context, a: Input): Promise<void> {
  const b = bookOf(a);
  const depth = a.opt<number>('depth') ?? 10;
  const clear = ctx.io.stdoutIsTty ? '\u001b[H\u001b[2J' : '';
  return untilInterrupted(ctx, (f) =>
    followBook({
      ...f,
      open: openStream(ctx, `gpu_type=${b.gpu_type}&zone=${b.zone}`, f.signal),
      event: (e) => {
        if (ctx.json) ctx.io.out(`${JSON.stringify(e.data)}\n`);
      },
      changed: (copy) => {
        if (!ctx.json) ctx.io.out(`${clear}${showBook(viewOf(copy, depth), ctx.style)}\n`);
      },
    }),
  );
}

const book: Leaf = {
  kind: 'leaf',
  name: 'book',
  args: BOOK,
  summary: 'the order book of a GPU type in a zone: its levels and a depth chart; --watch: live',
  example: 'gpux book h100 us-west-1 --watch',
  options: [
    DEPTH,
    {
      flags: '--watch',
      description: 'follow the live feed (GET /v1/stream) and redraw at each change, until Ctrl-C',
    },
  ],
  async run(ctx, a) {
    if (a.opt<boolean>('watch') === true) return watch(ctx, a);
    const api = ctx.api();
    const query = { ...bookOf(a), depth: a.opt<number>('depth') ?? 10 };
    const data = await api.read(api.client.GET('/v1/orderbook', { params: { query } }));
    ctx.io.out(ctx.json ? json(data) : showOrderBook(data, ctx.style));
  },
};

const trades = endpoint({
  name: 'trades',
  args: BOOK,
  summary: 'the recent anonymous fills of a book, newest first',
  example: 'gpux trades h100 us-west-1 --limit 50',
  options: PAGING,
  call: (c, a) =>
    c.GET('/v1/trades', {
      params: { query: given<Query<'/v1/trades'>>({ ...bookOf(a), ...paging(a) }) },
    }),
  show: showTrades,
});

const quote = endpoint({
  name: 'quote',
  args: [INSTANCE],
  summary: 'what a market buy would pay now: price, total with the fee, whether it fills',
  example: 'gpux quote 16xh100 --zone us-west-1 --hours 4',
  options: [ZONE_OPTION, HOURS_OPTION],
  call: (c, a) => c.GET('/v1/prices/estimate', { params: { query: estimateQuery(a) } }),
  show: showEstimate,
});

export const MARKET_COMMANDS: readonly Leaf[] = [book, trades, quote];
