// docs/operations.md "Upgrade and rollback", followed from the database the
// release 0.1.0 left behind: test/upgrade/v0.1.0.sql, made by
// test/upgrade/make-fixture.ts with that release's own exchange and agent
// (a provider's cluster, an active lease with its kubeconfig, a terminated
// one with its refund, resting orders, an SSH key, an Idempotency-Key; what
// it holds is in v0.1.0.json). The steps: back the database up, start this
// build on it with the same GPUX_SECRET_KEY; then everything reads as it did
// under 0.1.0 and the market trades. And the way back: a build refuses a
// schema newer than itself, and the backup restores the schema of 0.1.0.

import { execFileSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// Not part of the exchange's package (left out of its dist): listed by path in test/tsconfig.json.
import { createDatabase, uniqueDatabaseName } from '../exchange/src/db/testing/admin-database.js';
import type { ScratchDatabase } from '../exchange/src/db/testing/admin-database.js';
import { callApi } from './support/api.js';
import type { ApiAnswer } from './support/api.js';
import { runExchangeToExit, startExchangeProcess } from './support/exchange-process.js';
import type { ExchangeProcess } from './support/exchange-process.js';
import { MACHINE_NATS_URL, deleteStream } from './support/provider-stack.js';
import { idempotentCall, moveMomentsBy, readFixture, restoreFixture } from './upgrade/fixture.js';

const fixture = readFixture();
/** This build's migrations, by number (exchange/migrations/NNNN_name.sql). */
const MIGRATIONS = readdirSync(fileURLToPath(new URL('../exchange/migrations/', import.meta.url)))
  .map((f) => /^(\d{4})_.*\.sql$/.exec(f)?.[1])
  .filter((n): n is string => n !== undefined)
  .map(Number)
  .sort((a, b) => a - b);
const NEWEST = MIGRATIONS[MIGRATIONS.length - 1] ?? 0;

const tag = randomBytes(4).toString('hex');
const stream = `GPUX_E2E_UPGRADE_${process.pid}_${tag}`;
const dir = mkdtempSync(join(tmpdir(), 'gpux-upgrade-'));
const backupFile = join(dir, 'gpux-before-upgrade.dump');

let database: ScratchDatabase;
let restored: ScratchDatabase | undefined;
let ex: ExchangeProcess | undefined;

/** The settings of the exchange 0.1.0 ran with, as far as the database is concerned. */
function settings(): Record<string, string> {
  return {
    DATABASE_URL: database.url,
    GPUX_SECRET_KEY: fixture.secret_key,
    GPUX_ADMIN_TOKEN: `e2e-admin-${tag}${tag}`,
    GPUX_DATA_DIR: join(dir, 'exchange-data'),
    GPUX_DEMO: '0',
    NATS_URL: MACHINE_NATS_URL,
    GPUX_NATS_STREAM: stream,
    GPUX_NATS_SUBJECT_ROOT: `e2e${process.pid}u${tag}`,
  };
}

function token(account: string): string {
  const a = fixture.accounts[account];
  if (a === undefined) throw new Error(`no account ${account} in the fixture`);
  return a.token;
}

async function call(
  method: string,
  path: string,
  account: string,
  body?: unknown,
): Promise<ApiAnswer> {
  if (ex === undefined) throw new Error('the exchange is not running');
  return callApi(ex, method, path, token(account), body);
}

async function sql<T extends pg.QueryResultRow>(url: string, text: string): Promise<T[]> {
  const db = new pg.Client({ connectionString: url });
  await db.connect();
  try {
    return (await db.query<T>(text)).rows;
  } finally {
    await db.end();
  }
}

async function ledgerByAccount(url: string): Promise<Record<string, number>> {
  const rows = await sql<{ account_id: string; cents: string }>(
    url,
    'SELECT account_id, sum(amount_cents)::text AS cents FROM ledger_entries GROUP BY account_id',
  );
  return Object.fromEntries(rows.map((r) => [r.account_id, Number(r.cents)]));
}

const book = `gpu_type=${fixture.book.gpu_type}&zone=${fixture.book.zone}`;

beforeAll(async () => {
  // The database as 0.1.0 left it when its exchange stopped, a moment ago.
  database = await createDatabase(uniqueDatabaseName('gpux_upgrade'));
  restoreFixture(database.url);
  await moveMomentsBy(database.url, Date.now() - fixture.stopped_at_ms);
});

afterAll(async () => {
  await ex?.stop('SIGKILL');
  await database?.drop();
  await restored?.drop();
  await deleteStream(MACHINE_NATS_URL, stream);
  rmSync(dir, { recursive: true, force: true });
});

describe(`upgrade from ${fixture.release.version} (docs/operations.md)`, () => {
  it('the database of 0.1.0 is at its schema version, behind this build', async () => {
    const [row] = await sql<{ v: number }>(
      database.url,
      'SELECT max(version)::int AS v FROM schema_migrations',
    );
    expect(row?.v).toBe(fixture.schema_version);
    expect(NEWEST).toBeGreaterThan(fixture.schema_version);
  });

  it('the backup before the upgrade (the way back)', () => {
    execFileSync('pg_dump', ['--format=custom', '--file', backupFile, database.url]);
  });

  it('this build takes the database over, applies the missing migrations and names the schema version', async () => {
    ex = await startExchangeProcess(settings());
    const missing = MIGRATIONS.filter((v) => v > fixture.schema_version);
    expect(ex.output()).toContain(
      `migrations applied: ${missing.join(', ')}, schema version ${NEWEST}`,
    );
    const [row] = await sql<{ v: number }>(
      database.url,
      'SELECT max(version)::int AS v FROM schema_migrations',
    );
    expect(row?.v).toBe(NEWEST);
  });

  it('every balance and ledger row as before, the ledger summing to zero', async () => {
    for (const [name, a] of Object.entries(fixture.accounts)) {
      const account = await call('GET', '/v1/account', name);
      expect(account.status).toBe(200);
      expect(account.json['balance'], name).toBe(a.balance);
    }
    expect(await ledgerByAccount(database.url)).toEqual(fixture.ledger.balances_cents);
    const [total] = await sql<{ sum: string; n: number }>(
      database.url,
      'SELECT sum(amount_cents)::text AS sum, count(*)::int AS n FROM ledger_entries',
    );
    expect(total).toEqual({ sum: '0', n: fixture.ledger.entries });
  });

  it('the active lease and its kubeconfig read as before', async () => {
    const { lease_id: id, kubeconfig_sha256: sha } = fixture.leases.active;
    const lease = await call('GET', `/v1/leases/${id}`, 'lab');
    expect(lease.json).toMatchObject({
      lease_id: id,
      status: 'active',
      cluster_id: fixture.cluster_id,
    });
    const kubeconfig = await call('GET', `/v1/leases/${id}/kubeconfig`, 'lab');
    expect(kubeconfig.status).toBe(200);
    expect(createHash('sha256').update(kubeconfig.text).digest('hex')).toBe(sha);
  });

  it('the terminated lease and its refund read as before', async () => {
    const { lease_id: id, refund_amount: refund } = fixture.leases.terminated;
    const lease = await call('GET', `/v1/leases/${id}`, 'lab');
    expect(lease.json).toMatchObject({ lease_id: id, status: 'terminated', refund_amount: refund });
    const t = await call('GET', '/v1/account/transactions?limit=100', 'lab');
    const rows = t.json['transactions'] as {
      transaction_kind: string;
      amount: number;
      lease_id: string;
    }[];
    expect(rows.filter((r) => r.lease_id === id && r.transaction_kind === 'lease_refund')).toEqual([
      expect.objectContaining({ amount: refund }),
    ]);
  });

  it('the SSH keys are still registered', async () => {
    for (const key of fixture.ssh_keys) {
      const keys = await call('GET', '/v1/ssh_keys', key.account);
      expect(keys.json['ssh_keys']).toEqual([
        expect.objectContaining({ ssh_key_id: key.ssh_key_id, fingerprint: key.fingerprint }),
      ]);
    }
  });

  it('the open orders rest in the book as they did', async () => {
    for (const o of fixture.open_orders) {
      const order = await call('GET', `/v1/orders/${o.order_id}`, o.account);
      expect(order.json).toMatchObject({ order_id: o.order_id, status: 'pending', side: o.side });
    }
    const ob = await call('GET', `/v1/orderbook?${book}`, 'lab');
    expect({ bids: ob.json['bids'], asks: ob.json['asks'] }).toEqual(fixture.orderbook);
  });

  it('the Idempotency-Key of 0.1.0 still answers its stored response', async () => {
    const { account, status, response, ...request } = fixture.idempotency;
    if (ex === undefined) throw new Error('the exchange is not running');
    const again = await idempotentCall(ex.url, token(account), request);
    expect(again.status).toBe(status);
    expect(again.replayed).toBe('true');
    expect(again.json).toEqual(response);
  });

  it('a new buy trades against a resting sell', async () => {
    const sells = fixture.open_orders.filter((o) => o.side === 'sell');
    const buy = await call('POST', '/v1/orders', 'lab', {
      side: 'buy',
      ...fixture.book,
      gpu_count: 8,
      duration_hours: 2,
    });
    expect(buy.json).toMatchObject({
      status: 'filled',
      filled_gpus: 8,
      avg_price: sells[0]?.limit_price,
    });
    const lease = await call('GET', `/v1/leases/${buy.json['lease_id'] as string}`, 'lab');
    expect(lease.json['cluster_id']).toBe(fixture.cluster_id);
    const filled: string[] = [];
    for (const s of sells) {
      const order = await call('GET', `/v1/orders/${s.order_id}`, s.account);
      if (order.json['status'] === 'filled') filled.push(s.order_id);
    }
    expect(filled).toHaveLength(1);
  });
});

describe('rollback (docs/operations.md)', () => {
  it('a build refuses a database with migrations it lacks, in one line naming them and its newest', async () => {
    await ex?.stop('SIGTERM');
    ex = undefined;
    const future = NEWEST + 1;
    await sql(
      database.url,
      `INSERT INTO schema_migrations (version, name, checksum) VALUES (${future}, 'from_a_newer_build', 'x')`,
    );
    const run = await runExchangeToExit(settings());
    expect(run.code).toBe(1);
    const newestFile = String(NEWEST).padStart(4, '0');
    const line = run.stderr.split('\n').find((l) => l.startsWith('refusing to start'));
    expect(line).toMatch(
      new RegExp(
        `schema is newer than this build: it has ${String(future).padStart(4, '0')}_from_a_newer_build applied, and this build's newest migration is ${newestFile}_`,
      ),
    );
  });

  it('the backup taken before the upgrade restores the database of 0.1.0, at its schema version', async () => {
    restored = await createDatabase(uniqueDatabaseName('gpux_upgrade_back'));
    execFileSync('pg_restore', ['--no-owner', '--dbname', restored.url, backupFile]);
    const [row] = await sql<{ v: number }>(
      restored.url,
      'SELECT max(version)::int AS v FROM schema_migrations',
    );
    expect(row?.v).toBe(fixture.schema_version);
    expect(await ledgerByAccount(restored.url)).toEqual(fixture.ledger.balances_cents);
  });
});
