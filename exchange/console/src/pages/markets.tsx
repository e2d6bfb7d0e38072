// Markets: every book's best bid and ask, spread and 24 h volume; the chosen
// book's depth and candles, live from the public feed (GET /v1/stream) and
// GET /v1/candles, read as any client reads them.

import { useEffect, useRef, useState } from 'preact/hooks';
import type uPlot from 'uplot';

import { GPU_TYPES, ZONES, get, money } from '../api.js';
import { candleChart, candleData, depthChart, depthData } from './charts.js';
import type { Candle, Level } from './charts.js';

interface Summary {
  book: string;
  best_bid: number | null;
  best_ask: number | null;
  spread: number | null;
  volume_24h: number;
}

interface OrderBook {
  market_depth: { best_bid: number | null; best_ask: number | null; spread: number | null };
  volume_24h: number;
}

const BOOKS = GPU_TYPES.flatMap((g) => ZONES.map((z) => `${g} ${z}`));
const query = (book: string): string => {
  const [g, z] = book.split(' ');
  return `gpu_type=${g ?? ''}&zone=${z ?? ''}`;
};

async function summaries(): Promise<Summary[]> {
  return Promise.all(
    BOOKS.map(async (book) => {
      const b = await get<OrderBook>(`/v1/orderbook?${query(book)}`);
      return { book, ...b.market_depth, volume_24h: b.volume_24h };
    }),
  );
}

export function Markets() {
  const [rows, setRows] = useState<Summary[]>([]);
  const [book, setBook] = useState(BOOKS[0] ?? '');
  const [trades, setTrades] = useState(0);
  const [day, setDay] = useState({ gpus: 0, trades: 0 });
  const [levels, setLevels] = useState<{ bids: Level[]; asks: Level[] }>({ bids: [], asks: [] });
  const depthEl = useRef<HTMLDivElement>(null);
  const candleEl = useRef<HTMLDivElement>(null);
  const depth = useRef<uPlot>();
  const candles = useRef<uPlot>();

  useEffect(() => {
    summaries()
      .then(setRows)
      .catch(() => undefined);
  }, [trades]);

  useEffect(() => {
    const width = Math.min(900, (depthEl.current?.parentElement?.clientWidth ?? 600) - 8);
    if (depthEl.current !== null) depth.current = depthChart(depthEl.current, width);
    if (candleEl.current !== null) candles.current = candleChart(candleEl.current, width);
    return () => {
      depth.current?.destroy();
      candles.current?.destroy();
    };
  }, []);

  // The live feed of the chosen book: the levels, and each trade.
  useEffect(() => {
    const bids = new Map<number, number>();
    const asks = new Map<number, number>();
    const show = (): void =>
      setLevels({
        bids: [...bids].map(([price, gpus]) => ({ price, gpus })),
        asks: [...asks].map(([price, gpus]) => ({ price, gpus })),
      });
    const source = new EventSource(`/v1/stream?${query(book)}`);
    source.addEventListener('snapshot', (e) => {
      const s = JSON.parse((e as MessageEvent<string>).data) as { bids: Level[]; asks: Level[] };
      bids.clear();
      asks.clear();
      s.bids.forEach((l) => bids.set(l.price, l.gpus));
      s.asks.forEach((l) => asks.set(l.price, l.gpus));
      show();
    });
    source.addEventListener('level', (e) => {
      const l = JSON.parse((e as MessageEvent<string>).data) as Level & { side: 'bid' | 'ask' };
      const side = l.side === 'bid' ? bids : asks;
      if (l.gpus === 0) side.delete(l.price);
      else side.set(l.price, l.gpus);
      show();
    });
    source.addEventListener('trade', () => setTrades((n) => n + 1));
    return () => source.close();
  }, [book]);

  useEffect(() => {
    depth.current?.setData(depthData(levels.bids, levels.asks));
  }, [levels]);

  // Candles of the last two hours, and the last 24 hours' volume, read again on each trade.
  useEffect(() => {
    const now = Date.now();
    const since = (ms: number): string => new Date(now - ms).toISOString();
    // An answer for a book no longer shown (or an older read) arriving late is dropped.
    let current = true;
    get<{ candles: Candle[] }>(
      `/v1/candles?${query(book)}&granularity=60&start=${since(2 * 3_600_000)}`,
    )
      .then((r) => {
        if (!current) return;
        candles.current?.setData(candleData(r.candles));
        candleEl.current?.setAttribute('data-candles', String(r.candles.length));
      })
      .catch(() => undefined);
    get<{ candles: Candle[] }>(
      `/v1/candles?${query(book)}&granularity=3600&start=${since(24 * 3_600_000)}`,
    )
      .then((r) => {
        if (!current) return;
        setDay({
          gpus: r.candles.reduce((a, c) => a + c.volume_gpus, 0),
          trades: r.candles.reduce((a, c) => a + c.trades, 0),
        });
      })
      .catch(() => undefined);
    return () => {
      current = false;
    };
  }, [book, trades]);

  return (
    <>
      <h1>Markets</h1>
      <div class="scroll">
        <table>
          <caption class="sr-only">Every book</caption>
          <thead>
            <tr>
              <th scope="col">Book</th>
              <th scope="col">Best bid</th>
              <th scope="col">Best ask</th>
              <th scope="col">Spread</th>
              <th scope="col">24 h volume (GPUs)</th>
            </tr>
          </thead>
          <tbody>
            {rows.map((r) => (
              <tr key={r.book} aria-selected={r.book === book} data-book={r.book}>
                <td>
                  <button type="button" class="link" onClick={() => setBook(r.book)}>
                    {r.book}
                  </button>
                </td>
                <td>{money(r.best_bid)}</td>
                <td>{money(r.best_ask)}</td>
                <td>{money(r.spread)}</td>
                <td>{r.volume_24h}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      <label for="book">Book</label>{' '}
      <select id="book" value={book} onChange={(e) => setBook(e.currentTarget.value)}>
        {BOOKS.map((b) => (
          <option key={b} value={b}>
            {b}
          </option>
        ))}
      </select>
      <p role="status">
        {book}: {day.gpus} GPUs in {day.trades} trades over 24 h · {levels.bids.length} bid and{' '}
        {levels.asks.length} ask levels
      </p>
      <div class="chart" ref={depthEl} aria-label={`Depth of ${book}`} role="img" />
      <div class="chart" ref={candleEl} aria-label={`Candles of ${book}`} role="img" />
    </>
  );
}
