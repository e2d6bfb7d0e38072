// Markets: every book's best bid and ask, spread and 24 h volume; the chosen
// book's depth and candles, live from the public feed (GET /v1/stream) and
// GET /v1/candles, read as any client reads them.

import { useEffect, useRef, useState } from 'preact/hooks';
import type uPlot from 'uplot';

import { GPU_TYPES, ZONES, get, money } from '../api.js';
import { candleChart, candleData, depthChart, depthData } from './charts.js';
import type { CandleWindow } from './charts.js';
import type { Candles, FeedLevel, FeedSnapshot, Level, OrderBook } from '../types.js';

/** A book's row: its GET /v1/orderbook answer's best prices and volume. */
type Summary = Pick<OrderBook['market_depth'], 'best_bid' | 'best_ask' | 'spread'> &
  Pick<OrderBook, 'volume_24h'> & { book: string };

const HOUR_MS = 3_600_000;
/** The 1-minute candles charted: the last two hours. */
const CHART_MS = 2 * HOUR_MS;
/** Trades re-read the summaries and candles at most this often (docs/console.md). */
const REREAD_MS = 1_000;

const sumOf = (levels: Level[]): number => levels.reduce((a, l) => a + l.gpus, 0);

/** The chosen book's copy, kept from the live feed; `book` empty until its snapshot. */
interface Levels {
  book: string;
  bids: Level[];
  asks: Level[];
}

/**
 * A book's row, its best prices from the live copy when it is the chosen
 * book: a row read on the last trade misses the sells and buys placed or
 * withdrawn since (an agent relisting after a sale).
 */
function withLive(row: Summary, live: Levels): Summary {
  if (row.book !== live.book) return row;
  const bid = live.bids.length === 0 ? null : Math.max(...live.bids.map((l) => l.price));
  const ask = live.asks.length === 0 ? null : Math.min(...live.asks.map((l) => l.price));
  const spread = bid === null || ask === null ? null : Math.round((ask - bid) * 100) / 100;
  return { ...row, best_bid: bid, best_ask: ask, spread };
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
  const [levels, setLevels] = useState<Levels>({ book: '', bids: [], asks: [] });
  const depthEl = useRef<HTMLDivElement>(null);
  const candleEl = useRef<HTMLDivElement>(null);
  const depth = useRef<uPlot>();
  const candles = useRef<uPlot>();
  const span = useRef<CandleWindow>({
    start: (Date.now() - CHART_MS) / 1000,
    end: Date.now() / 1000,
    granularity: 60,
  });

  useEffect(() => {
    const width = Math.min(900, (depthEl.current?.parentElement?.clientWidth ?? 600) - 8);
    if (depthEl.current !== null) depth.current = depthChart(depthEl.current, width);
    if (candleEl.current !== null) {
      candles.current = candleChart(candleEl.current, width, span.current);
    }
    return () => {
      depth.current?.destroy();
      candles.current?.destroy();
    };
  }, []);

  // The live feed of the chosen book: the levels, and each trade. Opened
  // before the summaries are read: a browser holds at most six connections
  // to the exchange, and the stream queued behind twelve reads came late.
  useEffect(() => {
    const bids = new Map<number, number>();
    const asks = new Map<number, number>();
    setLevels({ book: '', bids: [], asks: [] });
    const show = (): void =>
      setLevels({
        book,
        bids: [...bids].map(([price, gpus]) => ({ price, gpus })),
        asks: [...asks].map(([price, gpus]) => ({ price, gpus })),
      });
    const source = new EventSource(`/v1/stream?${query(book)}`);
    source.addEventListener('snapshot', (e) => {
      const s = JSON.parse((e as MessageEvent<string>).data) as FeedSnapshot;
      bids.clear();
      asks.clear();
      s.bids.forEach((l) => bids.set(l.price, l.gpus));
      s.asks.forEach((l) => asks.set(l.price, l.gpus));
      show();
    });
    source.addEventListener('level', (e) => {
      const l = JSON.parse((e as MessageEvent<string>).data) as FeedLevel;
      const side = l.side === 'bid' ? bids : asks;
      if (l.gpus === 0) side.delete(l.price);
      else side.set(l.price, l.gpus);
      show();
    });
    // A busy book trades many times a second: one re-read for them all.
    let reread: ReturnType<typeof setTimeout> | undefined;
    source.addEventListener('trade', () => {
      reread ??= setTimeout(() => {
        reread = undefined;
        setTrades((n) => n + 1);
      }, REREAD_MS);
    });
    return () => {
      source.close();
      clearTimeout(reread);
    };
  }, [book]);

  useEffect(() => {
    summaries()
      .then(setRows)
      .catch(() => undefined);
  }, [trades]);

  // The chart, and what it holds as attributes (the console test reads them).
  useEffect(() => {
    const chart = depth.current;
    const el = depthEl.current;
    if (chart === undefined || el === null) return;
    chart.setData(depthData(levels.bids, levels.asks));
    el.setAttribute('data-points', String(chart.data[0]?.length ?? 0));
    el.setAttribute('data-bid-levels', String(levels.bids.length));
    el.setAttribute('data-ask-levels', String(levels.asks.length));
    el.setAttribute('data-bid-gpus', String(sumOf(levels.bids)));
    el.setAttribute('data-ask-gpus', String(sumOf(levels.asks)));
  }, [levels]);

  // Candles of the last two hours, and the last 24 hours' volume, read again on trades.
  useEffect(() => {
    const now = Date.now();
    const since = (ms: number): string => new Date(now - ms).toISOString();
    // An answer for a book no longer shown (or an older read) arriving late is dropped.
    let current = true;
    get<Candles>(`/v1/candles?${query(book)}&granularity=60&start=${since(CHART_MS)}`)
      .then((r) => {
        if (!current) return;
        // The x axis spans the range asked for, not just the candles there are.
        span.current.start = Date.parse(r.start) / 1000;
        span.current.end = Date.parse(r.end) / 1000;
        candles.current?.setData(candleData(r.candles));
        candleEl.current?.setAttribute('data-candles', String(r.candles.length));
      })
      .catch(() => undefined);
    get<Candles>(`/v1/candles?${query(book)}&granularity=3600&start=${since(24 * HOUR_MS)}`)
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
            {rows
              .map((read) => withLive(read, levels))
              .map((r) => (
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
      <div
        class="chart"
        ref={depthEl}
        aria-label={`Depth of ${book}: ${levels.bids.length} bid levels (${sumOf(levels.bids)} GPUs), ${levels.asks.length} ask levels (${sumOf(levels.asks)} GPUs)`}
        role="img"
      />
      <div class="chart" ref={candleEl} aria-label={`Candles of ${book}`} role="img" />
    </>
  );
}
