// Flags of the node process that runs the exchange: `npm start`, the HTTP
// bench, the end-to-end tests and any deploy unit launch it with these
// (`node ${EXCHANGE_NODE_FLAGS} exchange/dist/main.js`).
//
// --single-threaded-gc: V8 collects garbage on the main thread only, without
// helper threads for concurrent marking and parallel scavenges. The exchange
// shares its machine with PostgreSQL (and, in the bench, with the load
// generator); on two cores the helper threads took CPU from PostgreSQL's
// backends exactly when a major collection ran, and commits stalled. Measured
// with `npm run bench -- http`, interleaved runs: p99 at 1,000 orders/s
// 10.0–10.5 ms → 7.2–7.9 ms, at 2,000/s 11.4–19.7 ms → 7.6–12.3 ms, p99.9
// about halved (docs/benchmarks.md). On a machine with cores to spare the
// flag can be dropped.
//
// --initial-old-space-size=1024: V8 starts with room for 1 GiB of old
// generation before its first full (mark-compact) collection, instead of
// growing the limit from a few MiB. The exchange's live heap is small (about
// 40-60 MiB under load: books, open orders' rows, leases), but under load it
// promotes about 5 MiB/s of requests' and batches' objects that die soon
// after, so V8 ran a full collection every 3 s at 2,000 orders/s. On one
// thread each one marks the whole live heap in steps of several ms and ends
// in a pause of 5-21 ms; every request of every book queued behind it, and
// those bursts were the 1 % that p99 counts. With the larger start there was
// no full collection in a 15 s phase: `npm run bench -- http --rates 2000`,
// interleaved, p99 28.8-47.3 ms -> 13.7-14.1 ms (docs/benchmarks.md).
// A full collection still comes once the old generation reaches 1 GiB:
// minutes at 2,000 orders/s (a 240 s run got to 855 MiB without one). Its
// marking is proportional to the live heap, which grows with the resting
// orders whatever the flag: measured with the limit at 256 MiB, one full
// collection of a 95 MiB live heap marked for 175 ms in 94 steps over
// 225 ms, then paused 8 ms, and about 1,200 requests took over 25 ms around
// it. So the flag makes those bursts tens of times rarer; it does not make one
// cheaper. The price is memory: the process may grow to about 1.1 GiB.
export const EXCHANGE_NODE_FLAGS: readonly string[] = [
  '--single-threaded-gc',
  '--initial-old-space-size=1024',
];
