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
// --initial-old-space-size=1024: V8 lets the old generation reach at least
// 1 GiB before a full (mark-compact) collection, and keeps that as the
// minimum limit after each one. Without it V8 sets the limit after each full
// collection to the live heap times a factor it picks from GC speed against
// allocation rate; the exchange's live heap is small (about 40-60 MiB under
// load: books, open orders' rows, leases) and it promotes about 5 MiB/s of
// requests' and batches' objects that die soon after, so the room was small
// and V8 ran a full collection every 3 s at 2,000 orders/s. On one thread
// each one marks the whole live heap in steps of several ms and ends in a
// pause of 5-21 ms; every request of every book queued behind it, and those
// bursts were the 1 % that p99 counts. With the flag there was no full
// collection in a 15 s phase: `npm run bench -- http --rates 2000`,
// interleaved, p99 28.8-47.3 ms -> 13.7-14.1 ms (docs/benchmarks.md).
//
// What it does not do:
// - A full collection still comes when the old generation reaches 1 GiB: at
//   ~5 MiB/s, minutes apart (extrapolated; a 240 s run got to 855 MiB
//   without one). Marking costs what it did, as it follows the live heap,
//   which grows with the resting orders: with the limit at 256 MiB, one
//   collection of a 95 MiB live heap marked for 175 ms in 94 steps over
//   225 ms, then paused 8 ms, and about 1,200 requests took over 25 ms
//   around it. Its final pause also grows with the old generation (a plain
//   node script: 91 ms at 1 GiB, 19-24 ms at ~200 MiB; cause not
//   established). Better for p99, worse for the maximum.
// - Memory: the old generation reaches about 1 GiB between collections
//   (more with a larger live heap) and keeps it while idle; PGlite and
//   buffers come on top.
// - V8 caps the flag at half its heap limit, which it sizes from the
//   machine's (or container's) memory: under ~8 GiB the room is smaller.
// - External memory (Buffers promoted in numbers) still triggers full
//   collections whatever the flag.
// - Neither flag is allowed in NODE_OPTIONS: pass them on the command line.
export const EXCHANGE_NODE_FLAGS: readonly string[] = [
  '--single-threaded-gc',
  '--initial-old-space-size=1024',
];
