// The Markets page's two uPlot charts: the book's depth (cumulative GPUs
// bid at or above, asked at or below, each price) and candles of trades.

import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';

import type { Candle, Level } from '../types.js';

/** Sum of the GPUs of each level, deepest last. */
function cumulative(levels: Level[]): Level[] {
  let total = 0;
  return levels.map((l) => ({ price: l.price, gpus: (total += l.gpus) }));
}

/**
 * x: prices ascending; bids (GPUs bid at or above the price) and asks (asked
 * at or below) cumulative, null outside their side. Each side also gets a
 * point a little beyond its deepest level, holding its total, so that even a
 * side of one level draws a step (a lone point draws no line), and the x
 * axis reaches a little beyond both ends.
 */
export function depthData(bids: Level[], asks: Level[]): uPlot.AlignedData {
  const b = cumulative([...bids].sort((x, y) => y.price - x.price));
  const a = cumulative([...asks].sort((x, y) => x.price - y.price));
  const all = [...b, ...a].map((l) => l.price);
  if (all.length === 0) return [[], [], []];
  const lo = Math.min(...all);
  const hi = Math.max(...all);
  const pad = Math.max((hi - lo) * 0.1, hi * 0.05, 0.01);
  const lastBid = b[b.length - 1];
  const lastAsk = a[a.length - 1];
  const [left, right] = [Math.max(0, lo - pad), hi + pad];
  if (lastBid !== undefined) b.push({ price: left, gpus: lastBid.gpus });
  if (lastAsk !== undefined) a.push({ price: right, gpus: lastAsk.gpus });
  const prices = [...new Set([left, right, ...all])].sort((x, y) => x - y);
  const bestBid = b[0]?.price ?? -Infinity;
  const bestAsk = a[0]?.price ?? Infinity;
  // The cumulative of a side at any price: that of its deepest level reached.
  const deepBids = [...b].reverse();
  const deepAsks = [...a].reverse();
  const bidAt = (p: number): number | null =>
    p > bestBid ? null : (deepBids.find((l) => l.price >= p)?.gpus ?? null);
  const askAt = (p: number): number | null =>
    p < bestAsk ? null : (deepAsks.find((l) => l.price <= p)?.gpus ?? null);
  return [prices, prices.map(bidAt), prices.map(askAt)];
}

/** A stepped line, where this uPlot build has the stepped path builder. */
function stepped(align: -1 | 1): Pick<uPlot.Series, 'paths'> {
  const make = uPlot.paths.stepped;
  return make === undefined ? {} : { paths: make({ align }) };
}

export function depthChart(el: HTMLElement, width: number): uPlot {
  return new uPlot(
    {
      title: 'Depth',
      width,
      height: 240,
      scales: { x: { time: false } },
      axes: [{ label: '$/GPU-h' }, { label: 'GPUs' }],
      series: [
        { label: 'price' },
        { label: 'bids', stroke: '#1a7f37', fill: 'rgba(26,127,55,0.15)', ...stepped(-1) },
        { label: 'asks', stroke: '#cf222e', fill: 'rgba(207,34,46,0.15)', ...stepped(1) },
      ],
    },
    [[], [], []],
    el,
  );
}

/**
 * The time the candle chart spans (Unix seconds) and its candles' length:
 * the range the candles were asked for, so one candle is drawn as a minute
 * in the last two hours rather than auto-ranged into years around it.
 */
export interface CandleWindow {
  start: number;
  end: number;
  granularity: number;
}

/** OHLC boxes and wicks over the close line, drawn by hand (uPlot has no candle series). */
function drawCandles(u: uPlot, granularity: number): void {
  const [xs, opens, highs, lows, closes] = u.data as unknown as (number | null)[][];
  if (xs === undefined) return;
  const ctx = u.ctx;
  ctx.save();
  xs.forEach((x, i) => {
    const [o, h, l, c] = [opens?.[i], highs?.[i], lows?.[i], closes?.[i]];
    if (x === null || o == null || h == null || l == null || c == null) return;
    // A box 70 % of its interval wide, centred on the interval.
    const left = u.valToPos(x, 'x', true);
    const right = u.valToPos(x + granularity, 'x', true);
    const px = (left + right) / 2;
    const half = Math.max(2, (right - left) * 0.35);
    const [py, hy, ly, cy] = [o, h, l, c].map((v) => u.valToPos(v, 'y', true)) as [
      number,
      number,
      number,
      number,
    ];
    ctx.strokeStyle = ctx.fillStyle = c >= o ? '#1a7f37' : '#cf222e';
    ctx.beginPath();
    ctx.moveTo(px, hy);
    ctx.lineTo(px, ly);
    ctx.stroke();
    ctx.fillRect(px - half, Math.min(py, cy) - 1, half * 2, Math.max(2, Math.abs(cy - py)));
  });
  ctx.restore();
}

export function candleData(candles: Candle[]): uPlot.AlignedData {
  return [
    candles.map((c) => Date.parse(c.time) / 1000),
    candles.map((c) => c.open),
    candles.map((c) => c.high),
    candles.map((c) => c.low),
    candles.map((c) => c.close),
  ];
}

/** The x scale's range, as data attributes of the chart's element (read by the console test). */
function showRange(u: uPlot, key: string): void {
  if (key !== 'x') return;
  const { min, max } = u.scales['x'] ?? {};
  if (min == null || max == null) return;
  u.root.parentElement?.setAttribute('data-x-min', new Date(min * 1000).toISOString());
  u.root.parentElement?.setAttribute('data-x-max', new Date(max * 1000).toISOString());
}

/** `window` is read at each redraw: change it, then setData. */
export function candleChart(el: HTMLElement, width: number, window: CandleWindow): uPlot {
  return new uPlot(
    {
      title: 'Trades per minute (candles)',
      width,
      height: 240,
      scales: { x: { time: true, range: () => [window.start, window.end] } },
      axes: [{}, { label: '$/GPU-h' }],
      series: [
        {},
        { label: 'open', show: false },
        { label: 'high', show: false },
        { label: 'low', show: false },
        { label: 'close', stroke: '#57606a', width: 1 },
      ],
      hooks: { draw: [(u) => drawCandles(u, window.granularity)], setScale: [showRange] },
    },
    [[], [], [], [], []],
    el,
  );
}
