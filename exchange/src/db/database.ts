// One small interface over the two PostgreSQL engines the exchange runs on:
// a real server through `pg`, or PGlite (PostgreSQL in WebAssembly) for the
// embedded default (D34). Same SQL, same migrations.

/** Something that runs SQL: the database itself, or one open transaction. */
export interface QueryOptions {
  /**
   * Keep the statement prepared under this name on each connection, so the
   * server parses it once (a hot statement of fixed text). PGlite ignores it.
   */
  readonly name?: string;
}

export interface Queryable {
  query<Row = Record<string, unknown>>(
    sql: string,
    params?: readonly unknown[],
    options?: QueryOptions,
  ): Promise<Row[]>;
  /** Run a script of several statements, without parameters (migrations). */
  exec(sql: string): Promise<void>;
}

export interface Database extends Queryable {
  readonly kind: 'postgres' | 'pglite';
  /**
   * Run `fn` in one transaction: committed when it resolves, rolled back when
   * it throws (and the error rethrown).
   */
  transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T>;
  close(): Promise<void>;
}

/**
 * int8 (bigint) columns come back as JS numbers, exact or not at all: money is
 * integer cents (D1) and a value past 2^53 would be silently rounded.
 */
export function parseInt8(text: string): number {
  const n = Number(text);
  if (!Number.isSafeInteger(n)) {
    throw new RangeError(`int8 value ${text} does not fit a safe integer`);
  }
  return n;
}
