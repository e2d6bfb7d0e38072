-- Candles (GET /v1/candles, market/candles.ts) read a book's fills interval
-- by interval: for each interval, the first and last fill by (at_ms,
-- book_seq) and the sums of the fills in it, each a range of fills_book.
-- fills_book now carries the columns those reads need (INCLUDE), so they
-- are index-only scans and never visit the table: fills of the twelve books
-- are interleaved in the table, so a book's fills of one interval lie on
-- many pages, but in one run of the index.
--
-- Why not a rollup (a table of per-minute candles kept as fills are
-- written): it would be one more write on the order path for every batch
-- with a fill, and a copy of the fills that could disagree with them. The
-- index is already written for every fill (the book loader and the trades
-- read it); the included columns make each entry 16 bytes wider, and cost
-- no extra write. The figures: docs/benchmarks.md, "Candles".
--
-- The index is made again under its own name, with the same key, so the
-- reads that use it now (market/book-loader.ts, market/queries.ts) keep it.

DROP INDEX fills_book;
CREATE INDEX fills_book ON fills (gpu_type, zone, at_ms DESC, book_seq DESC)
  INCLUDE (price_cents, gpus, hours);
