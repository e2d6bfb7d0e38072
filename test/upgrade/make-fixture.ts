// Makes test/upgrade/v0.1.0.sql and test/upgrade/v0.1.0.json: the database
// that the release 0.1.0 leaves behind after a small real market, and what
// test/upgrade.test.ts checks of it after following docs/operations.md
// "Upgrade and rollback". Both files are this script's output: never edit
// them by hand; run it again (a few minutes: it installs the release):
//
//   npm run fixture:upgrade
//
// What it does:
// 1. checks the release out into a temporary git worktree (the tag v0.1.0;
//    RELEASE_COMMIT when this clone lacks the tag), `npm ci`, `npm run build`;
// 2. runs that release's exchange on a fresh PostgreSQL database (this
//    machine's NATS, a stream of its own) and its agent on a simulated
//    cluster of four nodes selling each at $2.50, through the end-to-end
//    tests' ProviderStack with launchers for the release's programs;
// 3. through the release's own REST API: an SSH key, a lease bought with an
//    Idempotency-Key and left active (its kubeconfig reported by the agent),
//    a lease bought and terminated (refund), a buy resting below the asks,
//    the agent's sells resting;
// 4. stops the agent, reads what the test will check, stops the exchange
//    (SIGTERM: it hands the market over), and writes pg_dump's plain SQL
//    (no owner, no privileges) and the JSON.

import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

import pg from 'pg';

import type { Launcher } from '../support/launch.js';
import { ProviderStack } from '../support/provider-stack.js';
import type { Account } from '../support/provider-stack.js';
import { FIXTURE_SECRET_KEY, idempotentCall } from './fixture.js';
import type { Fixture, FixtureOrder } from './fixture.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const OUT = fileURLToPath(new URL('.', import.meta.url));
const TAG = 'v0.1.0';
/**
 * Used when this clone has no tag v0.1.0 (tags do not travel with every
 * copy of the repository): main's last commit of issue 19, version 0.1.0,
 * the commit the notes of that work say the tag was made on.
 */
const RELEASE_COMMIT = 'd85c1761b9e59ed5be5e984454b7e68e6828ec43';
const SQL_FILE = 'v0.1.0.sql';
const JSON_FILE = 'v0.1.0.json';

function run(command: string, args: readonly string[], cwd: string): string {
  process.stderr.write(`$ ${command} ${args.join(' ')}   (in ${cwd})\n`);
  return execFileSync(command, args, {
    cwd,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
  });
}

/** The release's commit: the tag's when this clone has it, else RELEASE_COMMIT. */
function releaseCommit(): { commit: string; fromTag: boolean } {
  try {
    const commit = run('git', ['rev-parse', '--verify', `${TAG}^{commit}`], ROOT).trim();
    return { commit, fromTag: true };
  } catch {
    process.stderr.write(`no tag ${TAG} in this clone: using ${RELEASE_COMMIT}\n`);
    return { commit: RELEASE_COMMIT, fromTag: false };
  }
}

/** `node` on the release's built program, with the settings as its environment. */
function releaseLauncher(main: string, nodeFlags: readonly string[] = []): Launcher {
  return (settings) => ({
    command: process.execPath,
    args: [...nodeFlags, main],
    env: { ...process.env, ...settings },
  });
}

async function market(
  tree: string,
  release: Fixture['release'],
): Promise<{ fixture: Fixture; sql: string }> {
  const flagsModule = pathToFileURL(join(tree, 'exchange/dist/node-flags.js')).href;
  const { EXCHANGE_NODE_FLAGS } = (await import(flagsModule)) as {
    EXCHANGE_NODE_FLAGS: readonly string[];
  };
  const stack = await ProviderStack.start({
    label: 'gpux_release_fixture',
    nodes: ['gpu-1', 'gpu-2', 'gpu-3', 'gpu-4'],
    exchangeEnv: { GPUX_SECRET_KEY: FIXTURE_SECRET_KEY },
    // The longest heartbeat interval an agent may declare (300 s): the
    // exchange that takes this database over calls the agent silent, and
    // withdraws its sells, only 3 intervals after it starts (D29).
    agentEnv: { GPUX_HEARTBEAT_SECONDS: '300' },
    launch: {
      exchange: releaseLauncher(join(tree, 'exchange/dist/main.js'), EXCHANGE_NODE_FLAGS),
      agent: releaseLauncher(join(tree, 'agent/dist/main.js')),
    },
  });
  try {
    const book = { gpu_type: stack.gpuType, zone: stack.zone };
    const lab = stack.buyer;
    const studio = await stack.createAccount('studio');
    const accounts: Record<string, Account> = { farm: stack.provider, lab, studio };

    execFileSync('ssh-keygen', [
      '-q',
      '-t',
      'ed25519',
      '-N',
      '',
      '-C',
      'lab@fixture',
      '-f',
      join(stack.dir, 'lab'),
    ]);
    const publicKey = readFileSync(join(stack.dir, 'lab.pub'), 'utf8').trim();
    const key = await stack.ok('POST', '/v1/ssh_keys', lab.token, {
      name: 'laptop',
      public_key: publicKey,
    });

    await stack.waitForAsks(32);
    // The active lease, bought with an Idempotency-Key.
    const idempotent = {
      key: 'fixture-buy-active-lease',
      method: 'POST',
      path: '/v1/orders',
      body: { side: 'buy', ...book, gpu_count: 8, duration_hours: 48 },
    };
    const first = await idempotentCall(stack.url, lab.token, idempotent);
    if (first.status !== 200)
      throw new Error(`the idempotent buy answered ${first.status}: ${first.text}`);
    const activeId = first.json['lease_id'] as string;
    await stack.waitForLease(activeId);
    const kubeconfig = await stack.call('GET', `/v1/leases/${activeId}/kubeconfig`, lab.token);
    if (kubeconfig.status !== 200) throw new Error(`kubeconfig answered ${kubeconfig.status}`);

    // The terminated lease, with its refund (D26).
    const second = await stack.buyNode(lab.token, 24);
    const terminatedId = second['lease_id'] as string;
    await stack.waitForLease(terminatedId);
    const termination = await stack.terminate(terminatedId);

    // A buy resting below the asks. (The freed node is listed again at the
    // agent's next heartbeat, minutes away: the book keeps two asks.)
    const bid = await stack.ok('POST', '/v1/orders', studio.token, {
      side: 'buy',
      ...book,
      gpu_count: 8,
      duration_hours: 24,
      limit_price: 2.1,
    });
    if (bid['status'] !== 'pending')
      throw new Error(`the bid did not rest: ${JSON.stringify(bid)}`);
    await stack.stopAgent();

    const openOrders: FixtureOrder[] = [];
    for (const [name, who] of Object.entries(accounts)) {
      const o = await stack.ok('GET', '/v1/orders?status=pending&limit=100', who.token);
      for (const order of o['orders'] as Record<string, unknown>[]) {
        openOrders.push({
          account: name,
          order_id: order['order_id'] as string,
          side: order['side'] as 'buy' | 'sell',
          limit_price: order['limit_price'] as number,
          gpu_count: order['gpu_count'] as number,
        });
      }
    }
    const balances: Record<string, number> = {};
    for (const [name, who] of Object.entries(accounts)) balances[name] = await stack.balance(who);
    const orderbook = await stack.ok(
      'GET',
      `/v1/orderbook?gpu_type=${book.gpu_type}&zone=${book.zone}`,
      lab.token,
    );
    if (orderbook['asks'] === undefined) throw new Error('no order book');

    await stack.stopExchange('SIGTERM');
    const stoppedAtMs = Date.now();
    const db = new pg.Client({ connectionString: stack.database.url });
    await db.connect();
    let ledger: Fixture['ledger'];
    let schemaVersion: number;
    try {
      const v = await db.query<{ v: number }>(
        'SELECT max(version)::int AS v FROM schema_migrations',
      );
      schemaVersion = v.rows[0]?.v ?? 0;
      const sums = await db.query<{ account_id: string; cents: string }>(
        'SELECT account_id, sum(amount_cents)::text AS cents FROM ledger_entries GROUP BY account_id ORDER BY account_id',
      );
      const n = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM ledger_entries');
      ledger = {
        entries: n.rows[0]?.n ?? 0,
        balances_cents: Object.fromEntries(sums.rows.map((r) => [r.account_id, Number(r.cents)])),
      };
    } finally {
      await db.end();
    }
    const sql = execFileSync(
      'pg_dump',
      ['--format=plain', '--no-owner', '--no-privileges', stack.database.url],
      { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 },
    );

    const fixture: Fixture = {
      generated_by: 'test/upgrade/make-fixture.ts (npm run fixture:upgrade); never edit by hand',
      release,
      schema_version: schemaVersion,
      stopped_at_ms: stoppedAtMs,
      secret_key: FIXTURE_SECRET_KEY,
      book,
      cluster_id: stack.clusterId,
      accounts: Object.fromEntries(
        Object.entries(accounts).map(([name, a]) => [
          name,
          { account_id: a.accountId, token: a.token, balance: balances[name] ?? 0 },
        ]),
      ),
      ledger,
      leases: {
        active: {
          lease_id: activeId,
          order_id: first.json['order_id'] as string,
          kubeconfig_sha256: createHash('sha256').update(kubeconfig.text).digest('hex'),
        },
        terminated: {
          lease_id: terminatedId,
          refund_amount: termination.refund,
        },
      },
      open_orders: openOrders,
      orderbook: { bids: orderbook['bids'] as unknown[], asks: orderbook['asks'] as unknown[] },
      ssh_keys: [
        {
          account: 'lab',
          ssh_key_id: key['ssh_key_id'] as string,
          fingerprint: key['fingerprint'] as string,
        },
      ],
      idempotency: { account: 'lab', ...idempotent, status: first.status, response: first.json },
    };
    return { fixture, sql };
  } finally {
    await stack.close();
  }
}

async function main(): Promise<void> {
  const started = performance.now();
  const { commit, fromTag } = releaseCommit();
  const scratch = mkdtempSync(join(tmpdir(), 'gpux-release-'));
  const tree = join(scratch, 'gpux-0.1.0');
  run('git', ['worktree', 'add', '--detach', tree, commit], ROOT);
  try {
    const version = (
      JSON.parse(readFileSync(join(tree, 'package.json'), 'utf8')) as { version: string }
    ).version;
    if (version !== '0.1.0') throw new Error(`${commit} is version ${version}, not 0.1.0`);
    run('npm', ['ci', '--no-audit', '--no-fund'], tree);
    run('npm', ['run', 'build'], tree);
    const { fixture, sql } = await market(tree, { tag: TAG, commit, from_tag: fromTag, version });
    const header = [
      `-- Generated by test/upgrade/make-fixture.ts: never edit by hand; regenerate with`,
      `-- \`npm run fixture:upgrade\`. The PostgreSQL database of gpux ${fixture.release.version}`,
      `-- (${TAG}, commit ${commit}) after a small market, schema version ${fixture.schema_version};`,
      `-- what test/upgrade.test.ts checks of it is in ${JSON_FILE}.`,
      '',
    ].join('\n');
    writeFileSync(join(OUT, SQL_FILE), header + sql);
    writeFileSync(join(OUT, JSON_FILE), `${JSON.stringify(fixture, null, 2)}\n`);
    run('npx', ['prettier', '--write', '--log-level', 'warn', join(OUT, JSON_FILE)], ROOT);
    const seconds = ((performance.now() - started) / 1000).toFixed(0);
    process.stderr.write(`wrote test/upgrade/${SQL_FILE} and ${JSON_FILE} in ${seconds} s\n`);
  } finally {
    run('git', ['worktree', 'remove', '--force', tree], ROOT);
    rmSync(scratch, { recursive: true, force: true });
  }
}

await main();
