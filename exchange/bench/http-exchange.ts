// The exchange under test for the HTTP bench: a database of its own on the
// local PostgreSQL, the built exchange (`exchange/dist/main.js`) as a child
// process, and the admin API calls that onboard the bench's accounts and
// clusters. Everything here is undone by `stop()`, also after a failure.

import { execFileSync, spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFile, readdir } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

import pg from 'pg';
import type { Pool } from 'undici';

import { createDatabase, uniqueDatabaseName } from '../src/db/testing/admin-database.js';
import type { ScratchDatabase } from '../src/db/testing/admin-database.js';
import { EXCHANGE_NODE_FLAGS } from '../src/node-flags.js';

/** The repository root (this file is exchange/bench/). */
export const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const MAIN = fileURLToPath(new URL('../dist/main.js', import.meta.url));

/** The largest per-minute limit the exchange accepts (config.ts: at most 9 digits). */
const NO_RATE_LIMIT = '999999999';

/** `tsc -b exchange`: the bench runs what `npm start` runs. */
export function buildExchange(): void {
  const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
  execFileSync(process.execPath, [tsc, '-b', 'exchange'], { cwd: ROOT, stdio: 'inherit' });
}

export interface ExchangeOptions {
  /** Node flags for the child, e.g. `--cpu-prof`. */
  readonly nodeArgs: readonly string[];
  /** Called with each line the exchange prints after it started listening. */
  readonly onLog: (line: string) => void;
  /**
   * Diagnostic (`--no-flush-wait`): the database's commits do not wait for
   * the WAL flush (synchronous_commit off for the bench's database), so a
   * run shows what the latency is without the disk's fdatasync in it. Never
   * how the exchange is deployed: an acknowledged order could be lost.
   */
  readonly noFlushWait?: boolean;
  /** Added to (or overriding) the exchange's environment, e.g. GRPC_PORT. */
  readonly env?: Readonly<Record<string, string>>;
}

export class BenchExchange {
  private child: ChildProcess | undefined;
  /** Its database, on the server the tests use, once created. */
  private database: ScratchDatabase | undefined;
  private stopping: Promise<void> | undefined;
  url = '';
  serverVersion = '';
  readonly adminToken = `bench-admin-${randomBytes(16).toString('hex')}`;
  readonly dbName = uniqueDatabaseName('gpux_bench');

  get pid(): number | undefined {
    return this.child?.pid;
  }

  get databaseUrl(): string {
    if (this.database === undefined) throw new Error('the bench database is not created yet');
    return this.database.url;
  }

  /** Creates the database and starts the exchange on it; resolves with its URL. */
  async start(options: ExchangeOptions): Promise<string> {
    this.database = await createDatabase(this.dbName);
    this.serverVersion = this.database.serverVersion;
    // Set before the exchange connects, so every session on it takes it.
    if (options.noFlushWait === true) await noFlushWait(this.database);
    // As deployed: the exchange's own node flags (node-flags.ts), then the bench's.
    const started = startListening(
      'the exchange',
      [...EXCHANGE_NODE_FLAGS, ...options.nodeArgs, MAIN],
      {
        HOST: '127.0.0.1',
        PORT: '0',
        GRPC_PORT: '0',
        // BENCH_EXCHANGE_LOG_LEVEL=debug: a line per commit group (docs/benchmarks.md).
        LOG_LEVEL: process.env['BENCH_EXCHANGE_LOG_LEVEL'] ?? 'warn',
        DATABASE_URL: this.databaseUrl,
        // No NATS here: the in-process bus on purpose.
        GPUX_IN_PROCESS_BUS: '1',
        GPUX_ADMIN_TOKEN: this.adminToken,
        GPUX_DEMO: '0',
        GPUX_RATE_QUERIES_PER_MINUTE: NO_RATE_LIMIT,
        GPUX_RATE_ORDERS_PER_MINUTE: NO_RATE_LIMIT,
        GPUX_RATE_CANCELS_PER_MINUTE: NO_RATE_LIMIT,
        ...options.env,
      },
      options.onLog,
      () => this.stopping !== undefined,
    );
    this.child = started.child;
    this.url = await started.url;
    return this.url;
  }

  /** Creates an account through the admin API; returns its id and token. */
  async account(
    pool: Pool,
    name: string,
    organization: string,
    scopes: readonly string[],
  ): Promise<{ id: string; token: string }> {
    const r = await this.adminPost(pool, '/v1/admin/accounts', { name, organization, scopes });
    return { id: String(r['account_id']), token: String(r['token']) };
  }

  /** Creates a cluster of `nodes` nodes (n0, n1, … or these hostnames) through the admin API; returns its id. */
  async cluster(
    pool: Pool,
    providerAccountId: string,
    gpuType: string,
    zone: string,
    nodes: number | readonly string[],
  ): Promise<string> {
    const hosts: { hostname: string }[] =
      typeof nodes === 'number'
        ? Array.from({ length: nodes }, (_, i) => ({ hostname: `n${i}` }))
        : nodes.map((hostname) => ({ hostname }));
    const r = await this.adminPost(pool, '/v1/admin/clusters', {
      provider_account_id: providerAccountId,
      gpu_type: gpuType,
      zone,
      nodes: hosts,
    });
    return String(r['cluster_id']);
  }

  private async adminPost(
    pool: Pool,
    path: string,
    body: unknown,
  ): Promise<Record<string, unknown>> {
    const res = await pool.request({
      path,
      method: 'POST',
      headers: {
        authorization: `Bearer ${this.adminToken}`,
        'content-type': 'application/json',
      },
      body: JSON.stringify(body),
    });
    const text = await res.body.text();
    if (res.statusCode !== 201) throw new Error(`POST ${path}: ${res.statusCode} ${text}`);
    return JSON.parse(text) as Record<string, unknown>;
  }

  /**
   * Stops the exchange (SIGTERM: it drains and exits, writing a CPU profile
   * if asked to; SIGKILL after 15 s) and drops the database. Idempotent.
   */
  stop(): Promise<void> {
    this.stopping ??= this.doStop();
    return this.stopping;
  }

  private async doStop(): Promise<void> {
    if (this.child !== undefined) await stopChild(this.child);
    await this.database?.drop();
  }
}

/** `--no-flush-wait`: commits in `database` stop waiting for the WAL flush (sessions opened after this). */
export async function noFlushWait(database: ScratchDatabase): Promise<void> {
  const admin = new pg.Client({ connectionString: database.url });
  await admin.connect();
  try {
    await admin.query(`ALTER DATABASE ${database.name} SET synchronous_commit = off`);
  } finally {
    await admin.end();
  }
}

/**
 * Spawns `node args…` from the repository root with `env` added to the
 * bench's, in a process group of its own (a ctrl-c in the terminal reaches
 * the bench, which stops the child itself); resolves with the URL of its
 * `listening on http://…` line (`url`). Lines printed after that go to
 * `onLog`, and so does an exit the bench did not ask for (`stopping()` false).
 * The child is returned at once, so that a stop during start-up reaches it.
 */
export function startListening(
  what: string,
  args: readonly string[],
  env: Readonly<Record<string, string>>,
  onLog: (line: string) => void,
  stopping: () => boolean,
): { child: ChildProcess; url: Promise<string> } {
  const child = spawn(process.execPath, args, {
    cwd: ROOT,
    env: { ...process.env, ...env },
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const url = new Promise<string>((resolve, reject) => {
    let listening = false;
    const onLine = (line: string): void => {
      if (listening) {
        onLog(line);
        return;
      }
      output += `${line}\n`;
      const m = /listening on (http:\/\/\S+)/.exec(line);
      if (m?.[1] !== undefined) {
        listening = true;
        resolve(m[1]);
      }
    };
    lines(child.stdout, onLine);
    lines(child.stderr, onLine);
    child.once('exit', (code, signal) => {
      if (!listening) {
        reject(new Error(`${what} exited (${code ?? signal}) before listening:\n${output}`));
      } else if (!stopping()) {
        onLog(`${what} exited unexpectedly (${code ?? signal})`);
      }
    });
  });
  return { child, url };
}

/** SIGTERM (the child drains and exits, writing a CPU profile if asked to), SIGKILL after 15 s. */
export async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
  await exited;
  clearTimeout(timer);
}

function lines(stream: NodeJS.ReadableStream | null, onLine: (line: string) => void): void {
  if (stream === null) return;
  let buf = '';
  stream.setEncoding('utf8');
  stream.on('data', (chunk: string) => {
    buf += chunk;
    let nl = buf.indexOf('\n');
    while (nl >= 0) {
      onLine(buf.slice(0, nl));
      buf = buf.slice(nl + 1);
      nl = buf.indexOf('\n');
    }
  });
}

/** CPU time (user + system, ms) a process has used so far, from /proc; undefined elsewhere. */
export async function cpuMsOf(pid: number): Promise<number | undefined> {
  try {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name (which may hold spaces): state is field 3, utime 14, stime 15.
    const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const ticks = Number(rest[11]) + Number(rest[12]);
    return (ticks * 1000) / CLOCK_TICKS;
  } catch {
    return undefined;
  }
}

/**
 * CPU time (ms) used so far by each process named `name` (e.g. the
 * PostgreSQL server and its backends), by pid, from /proc; undefined
 * elsewhere. Compare two with cpuMsDelta().
 */
export async function cpuMsOfAll(name: string): Promise<Map<number, number> | undefined> {
  try {
    const out = new Map<number, number>();
    for (const entry of await readdir('/proc')) {
      if (!/^\d+$/.test(entry)) continue;
      const stat = await readFile(`/proc/${entry}/stat`, 'utf8').catch(() => '');
      const open = stat.indexOf('(');
      const close = stat.lastIndexOf(')');
      if (open < 0 || stat.slice(open + 1, close) !== name) continue;
      const rest = stat.slice(close + 2).split(' ');
      out.set(Number(entry), ((Number(rest[11]) + Number(rest[12])) * 1000) / CLOCK_TICKS);
    }
    return out;
  } catch {
    return undefined;
  }
}

/** CPU time (ms) used so far by the child processes of `pid` (the exchange's agents' service), from /proc. */
export async function cpuMsOfChildren(pid: number): Promise<number | undefined> {
  try {
    let total = 0;
    for (const entry of await readdir('/proc')) {
      if (!/^\d+$/.test(entry)) continue;
      const stat = await readFile(`/proc/${entry}/stat`, 'utf8').catch(() => '');
      const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      // Field 4 is the parent's pid.
      if (Number(rest[1]) !== pid) continue;
      total += ((Number(rest[11]) + Number(rest[12])) * 1000) / CLOCK_TICKS;
    }
    return total;
  } catch {
    return undefined;
  }
}

/**
 * CPU time (ms) the processes used between two cpuMsOfAll() readings: what
 * each process still running at the second used since the first (all of it,
 * if it started meanwhile). A process that exited in between is not counted,
 * so this is a lower bound, never negative.
 */
export function cpuMsDelta(
  before: ReadonlyMap<number, number>,
  after: ReadonlyMap<number, number>,
): number {
  let total = 0;
  for (const [pid, ms] of after) total += Math.max(0, ms - (before.get(pid) ?? 0));
  return total;
}

/**
 * CPU time of the whole machine (ms, all cores) from /proc/stat: busy (user,
 * nice, system, irq, softirq) and stolen by the hypervisor; undefined elsewhere.
 */
export async function machineCpuMs(): Promise<{ busy: number; steal: number } | undefined> {
  try {
    const line = (await readFile('/proc/stat', 'utf8')).split('\n')[0] ?? '';
    // cpu user nice system idle iowait irq softirq steal guest guest_nice (guest is in user)
    const f = line.trim().split(/\s+/).slice(1).map(Number);
    const at = (k: number): number => f[k] ?? 0;
    const busy = at(0) + at(1) + at(2) + at(5) + at(6);
    return { busy: (busy * 1000) / CLOCK_TICKS, steal: (at(7) * 1000) / CLOCK_TICKS };
  } catch {
    return undefined;
  }
}

/** USER_HZ: 100 on every Linux this runs on. */
const CLOCK_TICKS = 100;

/** Statistics and activity of the bench database, read over a connection of its own. */
export class PgProbe {
  private sampling: NodeJS.Timeout | undefined;
  private busy = false;
  /** pg_stat_activity samples: "wait event | query" → active backends seen. */
  readonly activity = new Map<string, number>();
  samples = 0;

  private constructor(
    private readonly client: pg.Client,
    private readonly dbName: string,
  ) {}

  static async open(url: string, dbName: string): Promise<PgProbe> {
    const client = new pg.Client({ connectionString: url });
    // Dropping the database (WITH FORCE, e.g. after ctrl-c) ends this connection.
    client.on('error', () => undefined);
    await client.connect();
    return new PgProbe(client, dbName);
  }

  /** Commits and rows written so far in the database (PostgreSQL flushes these about once a second). */
  async counters(): Promise<{ commits: number; rows: number }> {
    const r = await this.client.query<{ commits: string; rows: string }>(
      `SELECT xact_commit AS commits, tup_inserted + tup_updated + tup_deleted AS rows
         FROM pg_stat_database WHERE datname = $1`,
      [this.dbName],
    );
    return { commits: Number(r.rows[0]?.commits ?? 0), rows: Number(r.rows[0]?.rows ?? 0) };
  }

  /** Samples the active backends of the database every `everyMs` until stopSampling(). */
  startSampling(everyMs: number): void {
    this.sampling = setInterval(() => {
      if (this.busy) return;
      this.busy = true;
      this.client
        .query<{ what: string }>(
          `SELECT coalesce(wait_event_type || ':' || wait_event, 'on cpu') || ' | ' ||
                  left(regexp_replace(query, '\\s+', ' ', 'g'), 70) AS what
             FROM pg_stat_activity
            WHERE datname = $1 AND state = 'active' AND pid <> pg_backend_pid()`,
          [this.dbName],
        )
        .then((r) => {
          this.samples++;
          for (const { what } of r.rows)
            this.activity.set(what, (this.activity.get(what) ?? 0) + 1);
        })
        .catch(() => undefined)
        .finally(() => (this.busy = false));
    }, everyMs);
  }

  stopSampling(): void {
    if (this.sampling !== undefined) clearInterval(this.sampling);
    this.sampling = undefined;
  }

  async close(): Promise<void> {
    this.stopSampling();
    await this.client.end().catch(() => undefined);
  }
}
