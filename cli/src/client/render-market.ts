// The human output of the market's answers (docs/api/market-data.md): a
// book as a table of its levels and a depth chart drawn with block
// characters, the recent trades, a price estimate.

import type { Schemas } from './api.js';
import { fields, money, pageLine, paint, table, time } from './output.js';
import type { Style } from './output.js';

type S = Schemas;
type Level = S['Level'];

/** What a book shows: the REST answer, or the copy kept from the live feed. */
export interface BookView {
  readonly gpu_type: string;
  readonly zone: string;
  readonly bids: readonly Level[];
  readonly asks: readonly Level[];
  readonly sequence: number;
  readonly status?: string;
  readonly last_trade?: S['OrderBook']['last_trade'];
  readonly volume_24h?: number;
}

/** The widest bar of the depth chart, in characters. */
export const CHART_WIDTH = 40;

/** A bar of `n` out of `max`, CHART_WIDTH wide at most, at least one block when n > 0. */
function bar(n: number, max: number): string {
  if (n <= 0 || max <= 0) return '';
  return '█'.repeat(Math.max(1, Math.round((n / max) * CHART_WIDTH)));
}

/**
 * The depth chart of a book, on its side: the asks above (highest price
 * first), the bids below, each bar the GPUs available at that price or
 * better (cumulative from the spread), so its shape is the book's depth.
 */
export function depthChart(bids: readonly Level[], asks: readonly Level[], style: Style): string {
  if (bids.length === 0 && asks.length === 0) return `${paint('(no orders)', 'dim', style)}\n`;
  const cumulate = (levels: readonly Level[]): number[] => {
    let sum = 0;
    return levels.map((l) => (sum += l.gpus));
  };
  const askDepth = cumulate(asks);
  const bidDepth = cumulate(bids);
  const max = Math.max(0, ...askDepth, ...bidDepth);
  const width = Math.max(...[...asks, ...bids].map((l) => money(l.price).length));
  const line = (side: string, l: Level, depth: number, colour: 'red' | 'green'): string =>
    `${side.padEnd(4)}${money(l.price).padStart(width)} │${paint(bar(depth, max), colour, style)} ${depth}`;
  const lines: string[] = [];
  for (let i = asks.length - 1; i >= 0; i--) {
    lines.push(line(i === 0 ? 'ask' : '', asks[i] as Level, askDepth[i] ?? 0, 'red'));
  }
  const bestAsk = asks[0]?.price;
  const bestBid = bids[0]?.price;
  const spread =
    bestAsk !== undefined && bestBid !== undefined
      ? `spread ${money(Math.round((bestAsk - bestBid) * 100) / 100)}`
      : 'no spread: one side is empty';
  lines.push(paint(`${' '.repeat(4 + width)} ┼ ${spread}`, 'dim', style));
  bids.forEach((l, i) => lines.push(line(i === 0 ? 'bid' : '', l, bidDepth[i] ?? 0, 'green')));
  return `${lines.map((l) => l.trimEnd()).join('\n')}\n`;
}

/** The levels as one table: asks (highest first) over bids. */
function levels(book: BookView, style: Style): string {
  const rows = [
    ...[...book.asks]
      .reverse()
      .map((l) => ['ask', money(l.price), String(l.gpus), String(l.orders)]),
    ...book.bids.map((l) => ['bid', money(l.price), String(l.gpus), String(l.orders)]),
  ];
  return table(['side', 'price/GPU-h', 'gpus', 'orders'], rows, style);
}

export function showBook(book: BookView, style: Style): string {
  const pairs: [string, string][] = [['book', `${book.gpu_type} in ${book.zone}`]];
  if (book.status !== undefined) {
    pairs.push(['status', book.status === 'halted' ? paint('halted', 'red', style) : book.status]);
  }
  if (book.last_trade !== undefined) {
    const t = book.last_trade;
    pairs.push([
      'last trade',
      t === null ? 'none' : `${t.gpus} GPUs at ${money(t.price)} (${time(t.timestamp, style)})`,
    ]);
  }
  if (book.volume_24h !== undefined) pairs.push(['24 h volume', `${book.volume_24h} GPUs`]);
  pairs.push(['sequence', String(book.sequence)]);
  return `${fields(pairs, style)}\n${levels(book, style)}\n${depthChart(book.bids, book.asks, style)}`;
}

export function showOrderBook(book: S['OrderBook'], style: Style): string {
  return showBook(book, style);
}

export function showTrades(t: S['Trades'], style: Style): string {
  const rows = t.trades.map((x) => [time(x.timestamp, style), money(x.price), String(x.gpus)]);
  return (
    `${paint(`${t.gpu_type} in ${t.zone}`, 'bold', style)}\n` +
    table(['time', 'price/GPU-h', 'gpus'], rows, style) +
    pageLine(t, t.trades.length, style)
  );
}

/** Whether an estimate would fill now, in words. */
export function fillsNow(e: S['Estimate'], style: Style): string {
  if (e.sufficient_liquidity) return paint('yes', 'green', style);
  const missing = e.missing_gpus ?? e.gpu_count - e.total_available;
  return paint(`no: ${e.total_available} GPUs offered, ${missing} short`, 'yellow', style);
}

export function showEstimate(e: S['Estimate'], style: Style): string {
  const fills = e.fills.map((f) => `${f.gpus} at ${money(f.price)}`).join(', ');
  return fields(
    [
      ['instance', `${e.gpu_count}x${e.gpu_type} in ${e.zone} for ${e.duration_hours} h`],
      [
        'price',
        e.estimated_price === null ? 'none offered' : `${money(e.estimated_price)}/GPU-h (average)`,
      ],
      ['best ask', e.best_ask === null ? 'none' : `${money(e.best_ask)}/GPU-h`],
      ['compute', money(e.cost_breakdown.compute_cost)],
      ['fee', money(e.cost_breakdown.platform_fee)],
      ['total', paint(money(e.total_cost), 'bold', style)],
      ['fills now', fillsNow(e, style)],
      ...(fills === '' ? [] : ([['from asks', fills]] as [string, string][])),
    ],
    style,
  );
}
