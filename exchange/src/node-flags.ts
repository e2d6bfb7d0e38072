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
export const EXCHANGE_NODE_FLAGS: readonly string[] = ['--single-threaded-gc'];
