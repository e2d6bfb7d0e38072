-- The live feed's sequence number of each book (GET /v1/stream and
-- GET /v1/orderbook, docs/api/market-data.md): the number of the last update
-- the feed published. Written by the book's write batch that made the
-- updates (market/change-set.ts), in the same statement as the orders and
-- fills they show, so the number and the book are committed together or
-- not at all, and never counts an update that was rolled back. A process
-- that starts, or takes the market over, reads it with the book and goes on
-- from it: numbers only grow, and are never given twice, across restarts
-- and takeovers. No row: nothing published yet (0).
CREATE TABLE book_sequences (
  gpu_type text NOT NULL,
  zone text NOT NULL,
  sequence bigint NOT NULL CHECK (sequence >= 0),
  PRIMARY KEY (gpu_type, zone)
);
