// The API commands of `gpux` (issue 24 and the operators' issue 21,
// docs/cli.md) end to end: the built command as a child process against a
// real exchange process. The login is kept 0600; whoami, balance and the
// admin commands print the API's JSON with --json and tables without; an
// operator's change shows in the audit log with its reason; each failure
// exits with its documented code.

import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { callApi } from './support/api.js';
import { startExchangeProcess } from './support/exchange-process.js';
import type { ExchangeProcess } from './support/exchange-process.js';
import { runGpux, runGpuxOnTerminal } from './support/gpux-cli.js';
import type { GpuxRun } from './support/gpux-cli.js';
import { freePort } from './support/net.js';

const ADMIN_TOKEN = 'cli-test-admin-token-0123456789';
const dir = mkdtempSync(join(tmpdir(), 'gpux-cli-'));
let exchange: ExchangeProcess;

beforeAll(async () => {
  exchange = await startExchangeProcess({
    DATABASE_URL: '',
    GPUX_DATA_DIR: join(dir, 'data'),
    GPUX_ADMIN_TOKEN: ADMIN_TOKEN,
  });
});

afterAll(async () => {
  await exchange?.stop('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
});

/** gpux as an operator: the admin token from the environment, no login kept. */
function admin(...args: string[]): Promise<GpuxRun> {
  return runGpux(args, {
    XDG_CONFIG_HOME: join(dir, 'operator'),
    GPUX_URL: exchange.url,
    GPUX_API_TOKEN: ADMIN_TOKEN,
  });
}

/** A new customer account: its id and token, made with `gpux admin accounts create`. */
async function customer(name: string): Promise<{ id: string; token: string; home: string }> {
  const r = await admin(
    'admin',
    'accounts',
    'create',
    '--name',
    name,
    '--organization',
    `${name}-org`,
    '--scopes',
    'trade,read,leases',
    '--reason',
    'e2e customer',
    '--json',
  );
  expect(r.code, r.stderr).toBe(0);
  const made = JSON.parse(r.stdout) as { account_id: string; token: string };
  return { id: made.account_id, token: made.token, home: join(dir, name) };
}

/** gpux as a customer who ran `gpux login` with its config under `home`. */
function as(home: string, ...args: string[]): Promise<GpuxRun> {
  return runGpux(args, { XDG_CONFIG_HOME: home });
}

function json(r: GpuxRun): unknown {
  expect(r.code, r.stderr).toBe(0);
  return JSON.parse(r.stdout);
}

describe('gpux login, whoami, balance, transactions', () => {
  it('login checks the token, keeps URL and token in a 0600 file, and the other commands use it', async () => {
    const c = await customer('alice');
    const login = await runGpux(
      ['login', '--url', exchange.url, '--token', '-'],
      { XDG_CONFIG_HOME: c.home },
      `${c.token}\n`,
    );
    expect(login.code, login.stderr).toBe(0);
    expect(login.stdout).toContain(c.id);
    const path = join(c.home, 'gpux', 'config.json');
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(JSON.parse(readFileSync(path, 'utf8'))).toEqual({ url: exchange.url, token: c.token });

    const who = await as(c.home, 'whoami');
    expect(who.code, who.stderr).toBe(0);
    expect(who.stdout).toMatch(new RegExp(`^account +${c.id}$`, 'm'));
    expect(who.stdout).toMatch(/^name +alice$/m);
    expect(who.stdout).toMatch(new RegExp(`^exchange +${exchange.url}$`, 'm'));
    const account = await callApi(exchange, 'GET', '/v1/account', c.token);
    expect(json(await as(c.home, 'whoami', '--json'))).toEqual(account.json);

    const balance = await as(c.home, 'balance');
    expect(balance.stdout).toBe('balance       $0.00\ncredit limit  none\n');
    expect(json(await as(c.home, 'balance', '--json'))).toEqual(account.json);
  });

  it('transactions shows the ledger, as the API does with --json', async () => {
    const c = await customer('bob');
    expect(
      (
        await admin(
          'admin',
          'accounts',
          'adjust',
          c.id,
          '--amount',
          '25',
          '--reason',
          'outage credit',
        )
      ).code,
    ).toBe(0);
    const env = { XDG_CONFIG_HOME: c.home, GPUX_URL: exchange.url, GPUX_API_TOKEN: c.token };
    const human = await runGpux(['transactions'], env);
    expect(human.stdout).toMatch(/adjustment +adjustment +\+\$25\.00/);
    expect(human.stdout).toMatch(/^1–1 of 1$/m);
    const api = await callApi(exchange, 'GET', '/v1/account/transactions', c.token);
    expect(json(await runGpux(['transactions', '--json'], env))).toEqual(api.json);
    expect(json(await runGpux(['balance', '--json'], env))).toMatchObject({ balance: 25 });
  });

  it('GPUX_API_TOKEN overrides the kept token; GPUX_TOKEN (the agent\u2019s) is never read', async () => {
    const c = await customer('carol');
    const r = await runGpux(['whoami'], {
      XDG_CONFIG_HOME: c.home,
      GPUX_URL: exchange.url,
      GPUX_TOKEN: c.token,
    });
    expect(r.code).toBe(3);
    expect(r.stderr).toMatch(/not logged in/);
  });
});

describe('gpux token rotate', () => {
  it('replaces the kept token: the new one is kept and works, the old one is refused (exit 3)', async () => {
    const c = await customer('rotor');
    const login = await runGpux(['login', '--url', exchange.url, '--token', c.token], {
      XDG_CONFIG_HOME: c.home,
    });
    expect(login.code, login.stderr).toBe(0);
    const r = await as(c.home, 'token', 'rotate');
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^new token tok_\S+ kept in .*; token tok_\S+ no longer works$/m);
    expect(r.stdout).not.toContain(c.token);
    const path = join(c.home, 'gpux', 'config.json');
    const kept = JSON.parse(readFileSync(path, 'utf8')) as { url: string; token: string };
    expect(kept.url).toBe(exchange.url);
    expect(kept.token).not.toBe(c.token);
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect((await as(c.home, 'whoami')).code).toBe(0);
    const old = await runGpux(['whoami'], {
      XDG_CONFIG_HOME: join(dir, 'nobody'),
      GPUX_URL: exchange.url,
      GPUX_API_TOKEN: c.token,
    });
    expect(old.code).toBe(3);
    // From the environment: printed (gpux cannot change the environment), --json as the API answers.
    const env = {
      XDG_CONFIG_HOME: join(dir, 'nobody'),
      GPUX_URL: exchange.url,
      GPUX_API_TOKEN: kept.token,
    };
    const again = json(await runGpux(['token', 'rotate', '--json'], env)) as Record<
      string,
      unknown
    >;
    expect(again).toMatchObject({ token: expect.stringMatching(/^gpux_/) as string });
    expect((await runGpux(['whoami'], env)).code).toBe(3);
  });
});

describe('gpux admin', () => {
  it("accounts list --json is the API's JSON; without --json a table", async () => {
    await customer('dave');
    const api = await callApi(exchange, 'GET', '/v1/admin/accounts', ADMIN_TOKEN);
    expect(json(await admin('admin', 'accounts', 'list', '--json'))).toEqual(api.json);
    const human = await admin('admin', 'accounts', 'list', '--organization', 'dave-org');
    expect(human.stdout).toMatch(/^account +name +organization +status/);
    expect(human.stdout).toMatch(/ dave +dave-org +active +trade,read,leases /);
  });

  it('suspend with a reason: the account is suspended, its token refused, and the audit log says why', async () => {
    const c = await customer('erin');
    const r = await admin(
      'admin',
      'accounts',
      'suspend',
      c.id,
      '--reason',
      'chargeback under review',
    );
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^status +suspended since /m);
    const refused = await runGpux(['balance'], {
      XDG_CONFIG_HOME: c.home,
      GPUX_URL: exchange.url,
      GPUX_API_TOKEN: c.token,
    });
    expect(refused.code).toBe(3);
    expect(refused.stderr).toMatch(/^gpux: account_suspended: .*\(HTTP 403\)$/m);

    const audit = json(
      await admin('admin', 'audit', '--action', 'account.suspend', '--target-id', c.id, '--json'),
    ) as {
      entries: { actor: string; reason: string; after: { status: string } }[];
    };
    expect(audit.entries).toHaveLength(1);
    expect(audit.entries[0]).toMatchObject({
      actor: 'admin_token',
      reason: 'chargeback under review',
      after: { status: 'suspended' },
    });
    const human = await admin('admin', 'audit', '--target-id', c.id);
    expect(human.stdout).toMatch(
      /account\.suspend +account \S+ +chargeback under review +status: "active" → "suspended"/,
    );
  });

  it('books halt and resume: the book refuses orders while halted', async () => {
    const halt = await admin(
      'admin',
      'books',
      'halt',
      'h200',
      'eu-west-1',
      '--reason',
      'pricing incident',
    );
    expect(halt.code, halt.stderr).toBe(0);
    expect(halt.stdout).toMatch(/^h200 +eu-west-1 +halted +\d{4}-/m);
    const books = json(await admin('admin', 'books', 'list', '--json')) as {
      books: { gpu_type: string; zone: string; status: string }[];
    };
    expect(books.books.find((b) => b.gpu_type === 'h200' && b.zone === 'eu-west-1')?.status).toBe(
      'halted',
    );
    const c = await customer('frank');
    const order = await callApi(exchange, 'POST', '/v1/orders', c.token, {
      side: 'buy',
      gpu_type: 'h200',
      zone: 'eu-west-1',
      gpu_count: 8,
      duration_hours: 1,
    });
    expect(order.json).toMatchObject({ error: { code: 'market_halted' } });

    const resume = await admin(
      'admin',
      'books',
      'resume',
      'h200',
      'eu-west-1',
      '--reason',
      'incident closed',
      '--json',
    );
    expect(json(resume)).toMatchObject({
      gpu_type: 'h200',
      zone: 'eu-west-1',
      status: 'open',
      halted_at: null,
    });
  });
});

describe('exit codes', () => {
  it('404: exit 4 with the API code and message', async () => {
    const r = await admin('admin', 'accounts', 'show', 'acc_nosuchaccount');
    expect(r.code).toBe(4);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(/^gpux: not_found: .*\(HTTP 404\)$/m);
  });

  it("a customer's token on the admin API: forbidden, exit 3", async () => {
    const c = await customer('grace');
    const r = await runGpux(['admin', 'accounts', 'list'], {
      XDG_CONFIG_HOME: c.home,
      GPUX_URL: exchange.url,
      GPUX_API_TOKEN: c.token,
    });
    expect(r.code).toBe(3);
    expect(r.stderr).toMatch(/^gpux: forbidden: /m);
  });

  it('a change without --reason: usage, exit 2, before anything is sent', async () => {
    // Were it sent, nothing listens there: exit 8.
    const nowhere = `http://127.0.0.1:${await freePort()}`;
    const r = await runGpux(['admin', 'accounts', 'suspend', 'acc_x'], {
      XDG_CONFIG_HOME: dir,
      GPUX_URL: nowhere,
      GPUX_API_TOKEN: ADMIN_TOKEN,
    });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/required option '--reason <text>'/);
  });

  it('nothing listening: exit 8, naming the exchange', async () => {
    const nowhere = `http://127.0.0.1:${await freePort()}`;
    const r = await runGpux(['balance'], {
      XDG_CONFIG_HOME: dir,
      GPUX_URL: nowhere,
      GPUX_API_TOKEN: 'gpux_x',
    });
    expect(r.code).toBe(8);
    expect(r.stderr).toBe(`gpux: cannot reach the exchange at ${nowhere}: ECONNREFUSED\n`);
  });
});

describe('gpux commands --json', () => {
  it('lists every command with its flags, the programs\u2019 with their settings', async () => {
    const list = json(await runGpux(['commands', '--json'], {})) as {
      commands: { command: string; options: { flags: string }[] }[];
    };
    const names = list.commands.map((c) => c.command);
    for (const n of [
      'start',
      'exchange',
      'agent',
      'login',
      'whoami',
      'admin accounts suspend',
      'admin books halt',
      'commands',
    ]) {
      expect(names).toContain(n);
    }
    const exchangeFlags = list.commands
      .find((c) => c.command === 'exchange')
      ?.options.map((o) => o.flags);
    expect(exchangeFlags).toContain('--admin-token <value>');
    const suspend = list.commands
      .find((c) => c.command === 'admin accounts suspend')
      ?.options.map((o) => o.flags);
    expect(suspend).toEqual(['--reason <text>', '--json', '-h, --help']);
  });
});

describe('on a terminal', () => {
  it('colours the output, unless NO_COLOR is set', async () => {
    const env = { XDG_CONFIG_HOME: dir, GPUX_URL: exchange.url, GPUX_API_TOKEN: ADMIN_TOKEN };
    const coloured = await runGpuxOnTerminal(['admin', 'books', 'list'], env);
    expect(coloured.code).toBe(0);
    expect(coloured.output).toContain('\u001b[1mgpu\u001b[22m');
    const plain = await runGpuxOnTerminal(['admin', 'books', 'list'], { ...env, NO_COLOR: '1' });
    expect(plain.code).toBe(0);
    expect(plain.output).toMatch(/^gpu +zone +status/);
    expect(plain.output).not.toContain('\u001b[');
  });

  it('login without --token asks for it and does not echo it', async () => {
    const c = await customer('heidi');
    const r = await runGpuxOnTerminal(
      ['login', '--url', exchange.url],
      { XDG_CONFIG_HOME: c.home, NO_COLOR: '1' },
      {
        prompt: 'API token: ',
        typed: c.token,
      },
    );
    expect(r.code, r.output).toBe(0);
    expect(r.output).toContain(c.id);
    expect(r.output).not.toContain(c.token);
    expect(JSON.parse(readFileSync(join(c.home, 'gpux', 'config.json'), 'utf8'))).toMatchObject({
      token: c.token,
    });
  });
});
