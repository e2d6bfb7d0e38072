import pg from 'pg';

import type { Logger } from '../logger.js';
import { SILENT_LOGGER } from '../logger.js';
import type { Database, Queryable, QueryOptions } from './database.js';
import { parseInt8 } from './database.js';

const INT8_OID = 20;

export interface PostgresOptions {
  /**
   * A query not answered within this fails and its connection is dropped
   * (the ownership's renewals, market/ownership.ts: a connection that went
   * silent must not hold a process that may have lost the market).
   */
  readonly queryTimeoutMs?: number;
}

/** A real PostgreSQL server (DATABASE_URL). */
export function openPostgres(
  connectionString: string,
  maxConnections = 10,
  logger: Logger = SILENT_LOGGER,
  o: PostgresOptions = {},
): Database {
  const pool = new pg.Pool({
    connectionString,
    max: maxConnections,
    // The fence of every write batch (migration 0014) holds under READ
    // COMMITTED only: ask for it, whatever the server's or role's default.
    options: '-c default_transaction_isolation=read\\ committed',
    // A server that went away is found out by TCP, not waited for without end.
    keepAlive: true,
    ...(o.queryTimeoutMs === undefined ? {} : { query_timeout: o.queryTimeoutMs }),
    // Keep connections open once made. The default closes one idle for 10 s,
    // and its replacement costs a new backend process, cold catalog caches
    // and the batch statements prepared and planned again: a write that
    // lands on it took 10-20 ms instead of 1 (docs/persistence.md).
    idleTimeoutMillis: 0,
    // Per pool, not the process-wide pg.types, so nothing else is surprised.
    types: {
      getTypeParser: (oid: number, format?: 'text' | 'binary') =>
        oid === INT8_OID
          ? parseInt8
          : (pg.types.getTypeParser as (o: number, f?: string) => (v: string) => unknown)(
              oid,
              format,
            ),
    },
  });
  // An idle client's error (server restart) must not crash the process; the
  // next query gets a fresh connection or fails on its own.
  pool.on('error', (err) => {
    logger.warn({ err }, 'an idle PostgreSQL connection failed; the pool replaces it');
  });

  const on = (client: pg.PoolClient | pg.Pool): Queryable => ({
    async query<Row>(
      sql: string,
      params?: readonly unknown[],
      options?: QueryOptions,
    ): Promise<Row[]> {
      const values = params as unknown[] | undefined;
      const result =
        options?.name === undefined
          ? await client.query(sql, values)
          : await client.query({ name: options.name, text: sql, values: values ?? [] });
      return result.rows as Row[];
    },
    async exec(sql: string): Promise<void> {
      // Without parameters pg uses the simple protocol: several statements run.
      await client.query(sql);
    },
  });

  return {
    kind: 'postgres',
    ...on(pool),
    async transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T> {
      const client = await pool.connect();
      try {
        await client.query('BEGIN');
        const value = await fn(on(client));
        await client.query('COMMIT');
        return value;
      } catch (err) {
        await client.query('ROLLBACK').catch((rollbackErr: unknown) => {
          // The connection is likely gone; the error that matters is rethrown below.
          logger.warn({ err: rollbackErr }, 'ROLLBACK failed after a failed transaction');
        });
        throw err;
      } finally {
        client.release();
      }
    },
    async close(): Promise<void> {
      await pool.end();
    },
  };
}
