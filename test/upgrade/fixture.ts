// The database the release 0.1.0 left behind (v0.1.0.sql) and what it holds
// (v0.1.0.json), both written by make-fixture.ts; read by
// test/upgrade.test.ts.

import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

import pg from 'pg';

/**
 * GPUX_SECRET_KEY of the fixture's exchange: base64 of the 32 bytes
 * "gpux upgrade fixture: TEST ONLY!". It seals the kubeconfig in the
 * committed fixture, so it is public: a test key, never a deployment's.
 */
export const FIXTURE_SECRET_KEY = 'Z3B1eCB1cGdyYWRlIGZpeHR1cmU6IFRFU1QgT05MWSE=';

export const FIXTURE_SQL = fileURLToPath(new URL('v0.1.0.sql', import.meta.url));
const FIXTURE_JSON = fileURLToPath(new URL('v0.1.0.json', import.meta.url));

export interface FixtureOrder {
  readonly account: string;
  readonly order_id: string;
  readonly side: 'buy' | 'sell';
  readonly limit_price: number;
  readonly gpu_count: number;
}

export interface IdempotentRequest {
  readonly key: string;
  readonly method: string;
  readonly path: string;
  readonly body: Record<string, unknown>;
}

export interface Fixture {
  readonly generated_by: string;
  readonly release: {
    readonly tag: string;
    /** The commit built (the tag's, or make-fixture.ts's RELEASE_COMMIT when the clone lacked the tag). */
    readonly commit: string;
    readonly from_tag: boolean;
    readonly version: string;
  };
  /** The newest migration applied (schema_migrations). */
  readonly schema_version: number;
  /** When the release's exchange had stopped (epoch ms): the moment the database stands for. */
  readonly stopped_at_ms: number;
  readonly secret_key: string;
  readonly book: { readonly gpu_type: string; readonly zone: string };
  readonly cluster_id: string;
  /** By name: farm (the provider), lab and studio (buyers); balance in dollars. */
  readonly accounts: Readonly<
    Record<
      string,
      { readonly account_id: string; readonly token: string; readonly balance: number }
    >
  >;
  /** Every account's sum of ledger entries, platform accounts included. */
  readonly ledger: {
    readonly entries: number;
    readonly balances_cents: Readonly<Record<string, number>>;
  };
  readonly leases: {
    readonly active: {
      readonly lease_id: string;
      readonly order_id: string;
      readonly kubeconfig_sha256: string;
    };
    readonly terminated: { readonly lease_id: string; readonly refund_amount: number };
  };
  /** Every pending order of the three accounts. */
  readonly open_orders: readonly FixtureOrder[];
  /** GET /v1/orderbook's levels. */
  readonly orderbook: { readonly bids: readonly unknown[]; readonly asks: readonly unknown[] };
  readonly ssh_keys: readonly {
    readonly account: string;
    readonly ssh_key_id: string;
    readonly fingerprint: string;
  }[];
  /** A request made with an Idempotency-Key, and what it answered. */
  readonly idempotency: IdempotentRequest & {
    readonly account: string;
    readonly status: number;
    readonly response: Record<string, unknown>;
  };
}

export function readFixture(): Fixture {
  return JSON.parse(readFileSync(FIXTURE_JSON, 'utf8')) as Fixture;
}

export interface IdempotentAnswer {
  readonly status: number;
  readonly json: Record<string, unknown>;
  readonly text: string;
  /** The Idempotent-Replayed header (D23). */
  readonly replayed: string | null;
}

/** `request` with its Idempotency-Key (D23), as the holder of `token`. */
export async function idempotentCall(
  url: string,
  token: string,
  request: IdempotentRequest,
): Promise<IdempotentAnswer> {
  const res = await fetch(`${url}${request.path}`, {
    method: request.method,
    headers: {
      authorization: `Bearer ${token}`,
      'content-type': 'application/json',
      'idempotency-key': request.key,
    },
    body: JSON.stringify(request.body),
  });
  const text = await res.text();
  return {
    status: res.status,
    json: JSON.parse(text) as Record<string, unknown>,
    text,
    replayed: res.headers.get('idempotent-replayed'),
  };
}

/** Loads v0.1.0.sql into the (empty) database at `url` with psql, stopping at the first error. */
export function restoreFixture(url: string): void {
  execFileSync(
    'psql',
    ['--quiet', '--no-psqlrc', '-v', 'ON_ERROR_STOP=1', '-d', url, '-f', FIXTURE_SQL],
    {
      stdio: ['ignore', 'ignore', 'pipe'],
    },
  );
}

/**
 * Moves every moment the market keeps (the bigint `*_ms` columns: orders,
 * fills, leases, Idempotency-Keys, the outbox…) `deltaMs` later, so the
 * fixture stands for a database its exchange left a moment ago, whenever
 * the test runs: its active lease has not ended, its sells and its
 * Idempotency-Key have not expired. Durations are not moments and are not
 * `bigint *_ms` (`heartbeat_ms` is an integer).
 */
export async function moveMomentsBy(url: string, deltaMs: number): Promise<void> {
  const db = new pg.Client({ connectionString: url });
  await db.connect();
  try {
    const columns = await db.query<{ table_name: string; column_name: string }>(
      `SELECT table_name, column_name FROM information_schema.columns
        WHERE table_schema = 'public' AND data_type = 'bigint' AND column_name LIKE '%\\_ms'
        ORDER BY table_name, column_name`,
    );
    const byTable = new Map<string, string[]>();
    for (const { table_name: table, column_name: column } of columns.rows) {
      byTable.set(table, [...(byTable.get(table) ?? []), column]);
    }
    await db.query('BEGIN');
    // One statement per table, all its moments at once: its checks (an end
    // after its start) hold before and after.
    for (const [table, cols] of byTable) {
      const set = cols.map((c) => `"${c}" = "${c}" + $1::bigint`).join(', ');
      await db.query(`UPDATE "${table}" SET ${set}`, [deltaMs]);
    }
    await db.query('COMMIT');
  } finally {
    await db.end();
  }
}
