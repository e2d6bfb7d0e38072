// A whole market across real processes, for the provider-path tests and the
// lease bench: a throw-away PostgreSQL database, the built exchange on it
// (its own JetStream stream and subject root on NATS, rate limits lifted),
// a provider account with a cluster and a buyer onboarded through the admin
// API (D31), and the built agent on that cluster (simulated provisioner by
// default). Ports are chosen up front, so the exchange and the agent can each
// be stopped and started again on the same ones (and the agent on the same
// state directory).
//
//   const stack = await ProviderStack.start({ nodes: ['gpu-a', 'gpu-b'] });
//   await stack.waitForAsks(16);
//   const order = await stack.call('POST', '/v1/orders', stack.buyer.token, {...});
//   ...
//   await stack.close();

import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';

// Not part of the exchange's package (left out of its dist): listed by path in test/tsconfig.json.
import {
  createDatabase,
  uniqueDatabaseName,
} from '../../exchange/src/db/testing/admin-database.js';
import type { ScratchDatabase } from '../../exchange/src/db/testing/admin-database.js';
import { startAgentProcess } from './agent-process.js';
import type { AgentProcess, AgentSettings, StartAgentOptions } from './agent-process.js';
import { startExchangeProcess } from './exchange-process.js';
import type { ExchangeProcess } from './exchange-process.js';
import type { Launcher } from './launch.js';
import { callApi } from './api.js';
import type { ApiAnswer } from './api.js';
import { freePort } from './net.js';
import { until } from './until.js';

/** This machine's NATS with JetStream (helper context "Services"). */
export const MACHINE_NATS_URL = process.env['GPUX_TEST_NATS_URL'] ?? 'nats://127.0.0.1:4222';

const LIFTED = '1000000';

export interface ProviderStackOptions {
  /** Host names of the cluster's nodes (8 GPUs each); default two. */
  readonly nodes?: readonly string[];
  readonly gpuType?: string;
  readonly zone?: string;
  /** GPUX_ASK_PRICE of the agent, dollars per GPU-hour; null: the agent lists no sells. Default "2.50". */
  readonly askPrice?: string | null;
  /** Default the machine's NATS; a PrivateNats url for restart tests. */
  readonly natsUrl?: string;
  /** Added to (or overriding) the exchange's environment. */
  readonly exchangeEnv?: Record<string, string>;
  /** Added to (or overriding) the agent's environment. */
  readonly agentEnv?: Record<string, string>;
  /** Start the agent (default true); false: call startAgent() yourself. */
  readonly startAgent?: boolean;
  /** A name for the database and scratch directory (lower case, digits, _). */
  readonly label?: string;
  /** How the exchange and the agent run (default: `node` here); e.g. their images (test/images/). */
  readonly launch?: { readonly exchange?: Launcher; readonly agent?: Launcher };
}

export interface Account {
  readonly accountId: string;
  readonly token: string;
}

/** A row of GET /v1/account/transactions. */
export interface Transaction {
  readonly transaction_kind: string;
  readonly kind: string;
  readonly amount: number;
  readonly lease_id: string | null;
}

export class ProviderStack {
  readonly adminToken = `e2e-admin-${randomBytes(12).toString('hex')}`;
  /** The JetStream stream and subject root of this stack alone. */
  readonly natsStream: string;
  readonly natsSubjectRoot: string;
  readonly agentStateDir: string;
  exchange: ExchangeProcess | undefined;
  agent: AgentProcess | undefined;
  /** Filled in by start(). */
  provider!: Account;
  buyer!: Account;
  clusterId = '';

  private constructor(
    readonly options: ProviderStackOptions,
    /** A scratch directory removed by close(): keys, known_hosts, the agent's state. */
    readonly dir: string,
    readonly database: ScratchDatabase,
    readonly natsUrl: string,
    readonly httpPort: number,
    readonly grpcPort: number,
    readonly sshPort: number,
  ) {
    const tag = randomBytes(4).toString('hex');
    this.natsStream = `GPUX_E2E_${process.pid}_${tag}`;
    this.natsSubjectRoot = `e2e${process.pid}x${tag}`;
    this.agentStateDir = join(dir, 'agent-state');
    mkdirSync(this.agentStateDir, { recursive: true });
  }

  get nodes(): readonly string[] {
    return this.options.nodes ?? ['gpu-1', 'gpu-2'];
  }
  get gpuType(): string {
    return this.options.gpuType ?? 'h100';
  }
  get zone(): string {
    return this.options.zone ?? 'us-east-1';
  }
  get url(): string {
    return `http://127.0.0.1:${this.httpPort}`;
  }
  /** EXCHANGE_GRPC_URL for an agent. */
  get grpcUrl(): string {
    return `127.0.0.1:${this.grpcPort}`;
  }

  /** Database, exchange, accounts and cluster, then (unless told not to) the agent, ready. */
  static async start(options: ProviderStackOptions = {}): Promise<ProviderStack> {
    const label = options.label ?? 'gpux_e2e';
    const dir = realpathSync(mkdtempSync(join(tmpdir(), `${label.replace(/_/g, '-')}-`)));
    const database = await createDatabase(uniqueDatabaseName(label));
    const stack = new ProviderStack(
      options,
      dir,
      database,
      options.natsUrl ?? MACHINE_NATS_URL,
      await freePort(),
      await freePort(),
      await freePort(),
    );
    try {
      await stack.startExchange();
      await stack.onboard();
      if (options.startAgent !== false) await stack.startAgent();
      return stack;
    } catch (err) {
      await stack.close();
      throw err;
    }
  }

  /** The exchange's environment: this stack's database, NATS stream and ports; no rate limits. */
  exchangeEnv(): Record<string, string> {
    return {
      PORT: String(this.httpPort),
      GRPC_PORT: String(this.grpcPort),
      DATABASE_URL: this.database.url,
      GPUX_DATA_DIR: join(this.dir, 'exchange-data'),
      GPUX_ADMIN_TOKEN: this.adminToken,
      GPUX_DEMO: '0',
      NATS_URL: this.natsUrl,
      GPUX_NATS_STREAM: this.natsStream,
      GPUX_NATS_SUBJECT_ROOT: this.natsSubjectRoot,
      GPUX_RATE_QUERIES_PER_MINUTE: LIFTED,
      GPUX_RATE_ORDERS_PER_MINUTE: LIFTED,
      GPUX_RATE_CANCELS_PER_MINUTE: LIFTED,
      ...this.options.exchangeEnv,
    };
  }

  /** Starts the exchange (again) on the stack's ports and database. */
  async startExchange(extraEnv: Record<string, string> = {}): Promise<ExchangeProcess> {
    if (this.exchange !== undefined) throw new Error('the exchange is running');
    this.exchange = await startExchangeProcess(
      { ...this.exchangeEnv(), ...extraEnv },
      this.options.launch?.exchange === undefined ? {} : { launch: this.options.launch.exchange },
    );
    return this.exchange;
  }

  /** SIGTERM (drain) or SIGKILL (crash); resolves with its exit code. */
  async stopExchange(signal: 'SIGTERM' | 'SIGKILL' = 'SIGTERM'): Promise<number | null> {
    const ex = this.exchange;
    this.exchange = undefined;
    return (await ex?.stop(signal)) ?? null;
  }

  /** The agent's settings for this stack's cluster (README "The agent"). */
  agentEnv(): AgentSettings {
    const env: AgentSettings = {
      EXCHANGE_GRPC_URL: this.grpcUrl,
      GPUX_TOKEN: this.provider.token,
      GPUX_CLUSTER_ID: this.clusterId,
      NATS_URL: this.natsUrl,
      PROVISIONER: 'simulated',
      GPUX_SSH_LISTEN: `127.0.0.1:${this.sshPort}`,
      GPUX_STATE_DIR: this.agentStateDir,
      GPUX_HEARTBEAT_SECONDS: '1',
      HOME: this.dir,
    };
    const ask = this.options.askPrice === undefined ? '2.50' : this.options.askPrice;
    return { ...env, ...(ask === null ? {} : { GPUX_ASK_PRICE: ask }), ...this.options.agentEnv };
  }

  /** Starts the agent (again: same state directory and SSH port), ready unless told not to wait. */
  async startAgent(
    extraEnv: Record<string, string> = {},
    options: StartAgentOptions = {},
  ): Promise<AgentProcess> {
    if (this.agent !== undefined) throw new Error('the agent is running');
    this.agent = await startAgentProcess(
      { ...this.agentEnv(), ...extraEnv },
      this.options.launch?.agent === undefined
        ? options
        : { launch: this.options.launch.agent, ...options },
    );
    return this.agent;
  }

  /** SIGTERM (drain, D34) or SIGKILL (crash); resolves with its exit code. */
  async stopAgent(signal: 'SIGTERM' | 'SIGKILL' = 'SIGTERM'): Promise<number | null> {
    const agent = this.agent;
    this.agent = undefined;
    return (await agent?.stop(signal)) ?? null;
  }

  /** One request to the exchange's REST API. */
  call(method: string, path: string, token: string, body?: unknown): Promise<ApiAnswer> {
    return callApi(this.url, method, path, token, body);
  }

  /** A call that must answer `status` (default 200/201); its JSON. */
  async ok(
    method: string,
    path: string,
    token: string,
    body?: unknown,
    status?: number,
  ): Promise<Record<string, unknown>> {
    const r = await this.call(method, path, token, body);
    const good = status === undefined ? r.status === 200 || r.status === 201 : r.status === status;
    if (!good) throw new Error(`${method} ${path} answered ${r.status}: ${r.text}`);
    return r.json;
  }

  /** A new account through the admin API (D31); buyers by default. */
  async createAccount(
    name: string,
    scopes: readonly string[] = ['trade', 'read', 'leases'],
    organization = name,
  ): Promise<Account> {
    const a = await this.ok('POST', '/v1/admin/accounts', this.adminToken, {
      name,
      organization,
      scopes,
    });
    return { accountId: a['account_id'] as string, token: a['token'] as string };
  }

  /** A market buy of one node's 8 GPUs of this stack's type and zone; the order as answered. */
  async buyNode(
    token: string = this.buyer.token,
    hours = 2,
    gpus = 8,
  ): Promise<Record<string, unknown>> {
    return this.ok('POST', '/v1/orders', token, {
      side: 'buy',
      gpu_type: this.gpuType,
      zone: this.zone,
      gpu_count: gpus,
      duration_hours: hours,
    });
  }

  /** The account's ledger rows (the last 100). */
  async transactions(who: Account = this.buyer): Promise<Transaction[]> {
    const t = await this.ok('GET', '/v1/account/transactions?limit=100', who.token);
    return t['transactions'] as Transaction[];
  }

  /** The account's balance in dollars. */
  async balance(who: Account = this.buyer): Promise<number> {
    return (await this.ok('GET', '/v1/account', who.token))['balance'] as number;
  }

  /** DELETE /v1/leases/{id} (D26): checked to answer the lease terminated; its rate and refund. */
  async terminate(
    leaseId: string,
    token: string = this.buyer.token,
  ): Promise<{ rate: number; refund: number }> {
    const t = await this.ok('DELETE', `/v1/leases/${leaseId}`, token);
    if (t['lease_id'] !== leaseId || t['status'] !== 'terminated') {
      throw new Error(`DELETE /v1/leases/${leaseId} answered ${JSON.stringify(t)}`);
    }
    return { rate: t['rate'] as number, refund: t['refund_amount'] as number };
  }

  /** D31: the provider with its cluster of `nodes`, and a buyer of another organization. */
  private async onboard(): Promise<void> {
    this.provider = await this.createAccount('farm', ['trade', 'read', 'leases', 'provider']);
    this.buyer = await this.createAccount('lab');
    const c = await this.ok('POST', '/v1/admin/clusters', this.adminToken, {
      provider_account_id: this.provider.accountId,
      gpu_type: this.gpuType,
      zone: this.zone,
      nodes: this.nodes.map((hostname) => ({ hostname })),
    });
    this.clusterId = c['cluster_id'] as string;
  }

  /** Polls `cond` every `everyMs` until it holds; throws with the processes' output after `timeoutMs`. */
  waitFor<T>(
    what: string,
    cond: () => T | undefined | false | Promise<T | undefined | false>,
    timeoutMs = 30_000,
    everyMs = 25,
  ): Promise<T> {
    return until(what, cond, {
      timeoutMs,
      everyMs,
      output: () =>
        `--- agent:\n${this.agent?.output() ?? ''}\n--- exchange:\n${this.exchange?.output() ?? ''}`,
    });
  }

  /** Until the book of this cluster offers at least `gpus` GPUs (the agent lists its free nodes). */
  async waitForAsks(gpus: number, timeoutMs = 30_000): Promise<void> {
    const q = `/v1/orderbook?gpu_type=${this.gpuType}&zone=${this.zone}`;
    await this.waitFor(
      `${gpus} GPUs offered`,
      async () => {
        const book = await this.ok('GET', q, this.buyer.token);
        const asks = book['asks'] as { gpus: number }[];
        return asks.reduce((n, a) => n + a.gpus, 0) >= gpus;
      },
      timeoutMs,
      50,
    );
  }

  /** Until GET /v1/leases/{id} shows `status` (default active); the lease read. */
  async waitForLease(
    leaseId: string,
    token: string = this.buyer.token,
    status = 'active',
    timeoutMs = 30_000,
    everyMs = 25,
  ): Promise<Record<string, unknown>> {
    return this.waitFor(
      `lease ${leaseId} ${status}`,
      async () => {
        const l = await this.ok('GET', `/v1/leases/${leaseId}`, token);
        return l['status'] === status ? l : undefined;
      },
      timeoutMs,
      everyMs,
    );
  }

  private closing: Promise<void> | undefined;

  /** Stops the agent (drain, then kill) and the exchange, drops the database and the stream, removes the scratch directory. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      const agent = this.agent;
      this.agent = undefined;
      if (agent !== undefined) {
        const killer = setTimeout(() => void agent.stop('SIGKILL'), 10_000);
        await agent.stop('SIGTERM');
        clearTimeout(killer);
      }
      await this.stopExchange('SIGKILL');
      await this.database.drop().catch(() => undefined);
      await deleteStream(this.natsUrl, this.natsStream);
      rmSync(this.dir, { recursive: true, force: true });
    })();
    return this.closing;
  }
}

/** Removes this run's stream from the NATS server (its consumers go with it). */
export async function deleteStream(url: string, stream: string): Promise<void> {
  try {
    const nc = await connect({ servers: url, reconnect: false, timeout: 2_000 });
    try {
      const jsm = await jetstreamManager(nc);
      await jsm.streams.delete(stream).catch(() => undefined);
    } finally {
      await nc.close();
    }
  } catch {
    // a private server already stopped: its store goes with its directory
  }
}
