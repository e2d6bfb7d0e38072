// The HTTP bench's floor peer (docs/benchmarks.md "The floor peer"): the
// least a durable order endpoint has to do, on the same machine, the same
// PostgreSQL server and the same load as the exchange. Run by floor-peer.ts
// as a child process with the exchange's node flags:
//
//   DATABASE_URL=… node --import tsx exchange/bench/floor-server.ts
//
// POST /v1/orders: the body is parsed as JSON (a 400 if it is not an object)
// and written as one row; the answer goes out once its row is committed
// (synchronous_commit as the server has it, so after the WAL flush). Like the
// exchange, one writer per book (gpu_type, zone) with group commit: the
// bodies that arrive while a book's INSERT commits go together in its next
// one, one statement per batch. No authentication, rules, matching, ledger
// or events: what it costs is a floor under what any exchange that
// acknowledges durably can answer in on this machine.

import http from 'node:http';
import type { AddressInfo } from 'node:net';

import pg from 'pg';

const MAX_BATCH = 256;
const OK = '{"status":"pending","filled_gpus":0}';

interface Waiting {
  readonly body: string;
  readonly res: http.ServerResponse;
}

class BookWriter {
  private queue: Waiting[] = [];
  private busy = false;

  constructor(
    private readonly pool: pg.Pool,
    private readonly book: string,
  ) {}

  submit(w: Waiting): void {
    this.queue.push(w);
    if (this.busy) return;
    this.busy = true;
    // On the next turn, so the requests read in this one share the batch.
    setImmediate(() => void this.flush());
  }

  private async flush(): Promise<void> {
    const batch = this.queue.splice(0, MAX_BATCH);
    let status = 200;
    try {
      await this.pool.query({
        name: 'floor_insert',
        text: `INSERT INTO floor_orders (book, body, created_ms)
               SELECT $1, x, $2 FROM json_array_elements($3::json) AS x`,
        values: [this.book, Date.now(), `[${batch.map((w) => w.body).join(',')}]`],
      });
    } catch (err) {
      console.error(`floor: write failed: ${(err as Error).message}`);
      status = 500;
    }
    for (const w of batch) answer(w.res, status, status === 200 ? OK : '{"error":"write"}');
    if (this.queue.length > 0) setImmediate(() => void this.flush());
    else this.busy = false;
  }
}

function answer(res: http.ServerResponse, status: number, body: string): void {
  res.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(body),
  });
  res.end(body);
}

async function main(): Promise<void> {
  const url = process.env['DATABASE_URL'];
  if (url === undefined || url === '') throw new Error('DATABASE_URL is not set');
  // The exchange's pool size (server.ts) and its keep-alive of connections.
  const pool = new pg.Pool({ connectionString: url, max: 10, idleTimeoutMillis: 0 });
  await pool.query(`CREATE TABLE IF NOT EXISTS floor_orders (
    id bigserial PRIMARY KEY, book text NOT NULL, body jsonb NOT NULL, created_ms bigint NOT NULL)
    WITH (autovacuum_enabled = false)`);
  const books = new Map<string, BookWriter>();

  const server = http.createServer({ keepAliveTimeout: 600_000 }, (req, res) => {
    if (req.method !== 'POST' || req.url !== '/v1/orders') {
      answer(res, 404, '{"error":"not_found"}');
      return;
    }
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => (body += chunk));
    req.on('end', () => {
      let order: unknown;
      try {
        order = JSON.parse(body);
      } catch {
        order = undefined;
      }
      if (typeof order !== 'object' || order === null) {
        answer(res, 400, '{"error":"invalid_json"}');
        return;
      }
      const o = order as { gpu_type?: unknown; zone?: unknown };
      const book = `${String(o.gpu_type)}/${String(o.zone)}`;
      let writer = books.get(book);
      if (writer === undefined) {
        writer = new BookWriter(pool, book);
        books.set(book, writer);
      }
      writer.submit({ body, res });
    });
  });
  server.listen(0, '127.0.0.1', () => {
    const { port } = server.address() as AddressInfo;
    console.log(`floor listening on http://127.0.0.1:${port}`);
  });
  process.once('SIGTERM', () => {
    server.close();
    server.closeAllConnections();
    void pool.end().finally(() => process.exit(0));
  });
}

main().catch((err: unknown) => {
  console.error(`floor: ${(err as Error).message}`);
  process.exit(1);
});
