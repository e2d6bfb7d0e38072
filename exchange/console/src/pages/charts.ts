// The Markets page's two uPlot charts: the book's depth (cumulative GPUs
// bid at or above, asked at or below, each price) and candles of trades.

import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';

export interface Level {
  price: number;
  gpus: number;
}

export interface Candle {
  time: string;
  open: number;
  high: number;
  low: number;
  close: number;
  volume_gpus: number;
  trades: number;
}

/** x: prices ascending; bids and asks cumulative, null outside their side. */
export function depthData(bids: Level[], asks: Level[]): uPlot.AlignedData {
  const prices = [...new Set([...bids, ...asks].map((l) => l.price))].sort((a, b) => a - b);
  const bid = prices.map((p) => {
    if (bids.length === 0 || p > Math.max(...bids.map((b) => b.price))) return null;
    return bids.filter((b) => b.price >= p).reduce((a, b) => a + b.gpus, 0);
  });
  const ask = prices.map((p) => {
    if (asks.length === 0 || p < Math.min(...asks.map((a) => a.price))) return null;
    return asks.filter((a) => a.price <= p).reduce((s, a) => s + a.gpus, 0);
  });
  return [prices, bid, ask];
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

/** OHLC boxes and wicks over the close line, drawn by hand (uPlot has no candle series). */
function drawCandles(u: uPlot): void {
  const [xs, opens, highs, lows, closes] = u.data as unknown as (number | null)[][];
  if (xs === undefined) return;
  const ctx = u.ctx;
  const half = Math.max(2, (u.bbox.width / Math.max(20, xs.length)) * 0.3);
  ctx.save();
  xs.forEach((x, i) => {
    const [o, h, l, c] = [opens?.[i], highs?.[i], lows?.[i], closes?.[i]];
    if (x === null || o == null || h == null || l == null || c == null) return;
    const px = u.valToPos(x, 'x', true);
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
    ctx.fillRect(px - half, Math.min(py, cy), half * 2, Math.max(1, Math.abs(cy - py)));
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

export function candleChart(el: HTMLElement, width: number): uPlot {
  return new uPlot(
    {
      title: 'Trades per minute (candles)',
      width,
      height: 240,
      axes: [{}, { label: '$/GPU-h' }],
      series: [
        {},
        { label: 'open', show: false },
        { label: 'high', show: false },
        { label: 'low', show: false },
        { label: 'close', stroke: '#57606a', width: 1 },
      ],
      hooks: { draw: [drawCandles] },
    },
    [[], [], [], [], []],
    el,
  );
}
