// The floor peer of the HTTP bench (floor-server.ts) as the bench runs it: a
// database of its own on the same PostgreSQL server as the exchange's, the
// server as a child process with the exchange's node flags. Undone by
// stop(), also after a failure.

import type { ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';

import { createDatabase, uniqueDatabaseName } from '../src/db/testing/admin-database.js';
import type { ScratchDatabase } from '../src/db/testing/admin-database.js';
import { EXCHANGE_NODE_FLAGS } from '../src/node-flags.js';
import { noFlushWait, startListening, stopChild } from './http-exchange.js';

const SERVER = fileURLToPath(new URL('./floor-server.ts', import.meta.url));

export class FloorPeer {
  private child: ChildProcess | undefined;
  private database: ScratchDatabase | undefined;
  private stopping: Promise<void> | undefined;
  readonly dbName = uniqueDatabaseName('gpux_floor');

  get pid(): number | undefined {
    return this.child?.pid;
  }

  get databaseUrl(): string {
    if (this.database === undefined) throw new Error('the floor database is not created yet');
    return this.database.url;
  }

  /**
   * Creates its database and starts the server; resolves with its URL.
   * `flushWait` false: as the exchange's with `--no-flush-wait`.
   */
  async start(onLog: (line: string) => void, flushWait = true): Promise<string> {
    this.database = await createDatabase(this.dbName);
    if (!flushWait) await noFlushWait(this.database);
    // tsx, as the bench itself runs: the server is a few lines, compiled once at start.
    const started = startListening(
      'the floor peer',
      [...EXCHANGE_NODE_FLAGS, '--import', 'tsx', SERVER],
      { DATABASE_URL: this.database.url },
      onLog,
      () => this.stopping !== undefined,
    );
    this.child = started.child;
    return started.url;
  }

  stop(): Promise<void> {
    this.stopping ??= (async () => {
      if (this.child !== undefined) await stopChild(this.child);
      await this.database?.drop();
    })();
    return this.stopping;
  }
}
