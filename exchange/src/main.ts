// Entry point of `npm start`: configure, listen, print the URL, drain on signals.

import { mkdirSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';

import { seedDemo } from './accounts/demo.js';
import { buildApp } from './app.js';
import { purgeIdempotencyKeys } from './auth/idempotency.js';
import { newApiToken } from './auth/tokens.js';
import { ConfigError, loadConfig } from './config.js';
import type { Config } from './config.js';
import type { Database } from './db/database.js';
import { migrate } from './db/migrate.js';
import { openPglite } from './db/pglite.js';
import { openPostgres } from './db/postgres.js';
import { captureWrites } from './market/capture.js';
import { Market } from './market/market.js';
import { EXCHANGE_NODE_FLAGS } from './node-flags.js';

function readConfig(): Config {
  try {
    return loadConfig(process.env);
  } catch (err) {
    if (err instanceof ConfigError) {
      console.error(err.message);
      process.exit(2);
    }
    throw err;
  }
}

function urlOf(host: string, port: number): string {
  return `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
}

/** D34: PostgreSQL when DATABASE_URL is set, else PGlite on disk under GPUX_DATA_DIR. */
async function openDatabase(config: Config): Promise<Database> {
  if (config.databaseUrl !== undefined) return openPostgres(config.databaseUrl);
  const dir = join(config.dataDir, 'pgdata');
  mkdirSync(dir, { recursive: true });
  return openPglite(dir);
}

const config = readConfig();
const missingFlags = EXCHANGE_NODE_FLAGS.filter((f) => !process.execArgv.includes(f));
if (missingFlags.length > 0) {
  console.log(
    `note: node runs without ${missingFlags.join(' ')}, which npm start uses (exchange/src/node-flags.ts says why)`,
  );
}
const opened = await openDatabase(config);
const db =
  config.captureWritesFile === undefined ? opened : captureWrites(opened, config.captureWritesFile);
if (config.captureWritesFile !== undefined) {
  console.log(
    `note: every write batch is also appended to ${config.captureWritesFile} (GPUX_CAPTURE_WRITES)`,
  );
}
const applied = await migrate(db);
console.log(
  `database: ${config.databaseUrl === undefined ? `PGlite in ${join(config.dataDir, 'pgdata')}` : 'PostgreSQL (DATABASE_URL)'}` +
    (applied.length > 0 ? `, migrations applied: ${applied.join(', ')}` : ', schema up to date'),
);
let adminToken = config.adminToken;
if (adminToken === undefined) {
  adminToken = newApiToken();
  console.log(`admin token (GPUX_ADMIN_TOKEN unset, generated for this run): ${adminToken}`);
}
// Every book is rebuilt from the database before the first request (flow 5).
const market = await Market.open(db, { provisioningTimeoutMs: config.provisioningTimeoutMs });
const app = buildApp(config, { db, adminToken, market });
// D34: demo data on the embedded database, or on PostgreSQL when asked for.
const demo = config.databaseUrl === undefined || config.demo ? await seedDemo(db) : undefined;

// D23: keys are kept 24 h; forget older ones once an hour.
const purge = setInterval(
  () => void purgeIdempotencyKeys(db, Date.now()).catch(() => undefined),
  3_600_000,
);
purge.unref();

let draining = false;
async function drain(signal: NodeJS.Signals): Promise<void> {
  if (draining) {
    // A second signal means the operator will not wait for in-flight requests.
    process.exit(1);
  }
  draining = true;
  console.log(`${signal} received, draining`);
  try {
    // Stops accepting connections, lets in-flight requests finish (D34).
    await app.close();
    await market.close();
    await db.close();
    process.exit(0);
  } catch (err) {
    console.error('shutdown failed', err);
    process.exit(1);
  }
}
process.on('SIGTERM', (signal) => void drain(signal));
process.on('SIGINT', (signal) => void drain(signal));

await app.listen({ host: config.host, port: config.port });
// PORT=0 picks a free port, so print the one actually bound.
const { port } = app.server.address() as AddressInfo;
const url = urlOf(config.host, port);
console.log(`listening on ${url}`);
if (demo !== undefined) {
  console.log(`demo buyer token (${demo.buyerAccountId}): ${demo.buyerToken}`);
  console.log(
    `demo provider token (${demo.providerAccountId}, cluster ${demo.clusterId}): ${demo.providerToken}`,
  );
  // Something to buy: the demo provider offers two of its nodes if it offers none.
  const offered = await db.query(
    'SELECT 1 FROM orders WHERE cluster_id = $1 AND book_state IS NOT NULL LIMIT 1',
    [demo.clusterId],
  );
  if (offered.length === 0) {
    await app.inject({
      method: 'POST',
      url: '/v1/orders',
      headers: { authorization: `Bearer ${demo.providerToken}` },
      payload: {
        side: 'sell',
        gpu_type: 'h100',
        zone: 'us-west-1',
        gpu_count: 16,
        duration_hours: 720,
        limit_price: 2.5,
        cluster_id: demo.clusterId,
      },
    });
  }
  console.log(`try: curl -H 'Authorization: Bearer ${demo.buyerToken}' ${url}/v1/account`);
  console.log(
    `     curl -H 'Authorization: Bearer ${demo.buyerToken}' -H 'Content-Type: application/json' ` +
      `-d '{"side":"buy","gpu_type":"h100","zone":"us-west-1","gpu_count":8,"duration_hours":2}' ${url}/v1/orders`,
  );
}
