// `gpux login|logout|whoami|balance|transactions`: the login kept in the
// user's config directory (config.ts) and the caller's own account
// (docs/api/accounts.md).

import { openApi } from './api.js';
import type { Api, Query, Schemas } from './api.js';
import { endpoint, given, group, json } from './command.js';
import type { Context, Group, Leaf } from './command.js';
import {
  configPath,
  normalizeToken,
  normalizeUrl,
  readLogin,
  removeLogin,
  resolveLogin,
  writeLogin,
} from './config.js';
import { ApiError } from './exit.js';
import { PAGING, paging } from './parse.js';
import { showAccount, showAdminToken, showBalance, showTransactions } from './render.js';
import type { Pairs } from './render.js';

/** Who a token is: an account, or the exchange's admin token (which has none). */
type Identity = { readonly account: Schemas['Account'] } | { readonly adminToken: true };

/**
 * Who holds the token: GET /v1/account; when that is 401, the admin token
 * (GPUX_ADMIN_TOKEN) is tried on an admin read, as it has no account.
 */
async function identify(api: Api): Promise<Identity> {
  try {
    return { account: await api.read(api.client.GET('/v1/account')) };
  } catch (e) {
    if (!(e instanceof ApiError) || e.status !== 401) throw e;
    try {
      await api.read(api.client.GET('/v1/admin/platform'));
    } catch {
      throw e;
    }
    return { adminToken: true };
  }
}

/** --json of whoami: the account as the API sent it, or what the admin token is. */
function identityJson(who: Identity): unknown {
  return 'account' in who ? who.account : { actor: 'admin_token' };
}

function identityText(who: Identity, ctx: Context, more: Pairs): string {
  return 'account' in who
    ? showAccount(who.account, ctx.style, more)
    : showAdminToken(ctx.style, more);
}

const login: Leaf = {
  kind: 'leaf',
  name: 'login',
  summary: "keep the exchange's URL and your API token for the other commands",
  example: 'gpux login --url http://127.0.0.1:8080 --token gpux_… (or: … --token - < token-file)',
  options: [
    { flags: '--url <url>', description: "the exchange's base URL", required: true },
    {
      flags: '--token <token>',
      description: 'your API token; - or absent: read from stdin (typed unechoed on a terminal)',
    },
    { flags: '--no-check', description: 'keep them without asking the exchange who the token is' },
  ],
  async run(ctx, input) {
    const url = normalizeUrl(input.opt('url') ?? '', '--url');
    const given = input.opt('token');
    const token = normalizeToken(
      given === undefined || given === '-' ? await ctx.io.readSecret('API token: ') : given,
      given === undefined || given === '-' ? 'the token read from stdin' : '--token',
    );
    const path = configPath(ctx.io.env);
    if (input.opt<boolean>('check') === false) {
      writeLogin(path, { url, token });
      ctx.io.out(ctx.json ? json({ url }) : `kept ${url} and the token in ${path}\n`);
      return;
    }
    const who = await identify(
      openApi(url, token, ctx.io.fetch === undefined ? {} : { fetch: ctx.io.fetch }),
    );
    writeLogin(path, { url, token });
    if (ctx.json) {
      ctx.io.out(json(identityJson(who)));
      return;
    }
    ctx.io.out(
      identityText(who, ctx, [
        ['exchange', url],
        ['kept in', path],
      ]),
    );
  },
};

const logout: Leaf = {
  kind: 'leaf',
  name: 'logout',
  summary: 'forget the kept URL and token',
  example: 'gpux logout',
  noJson: true,
  run(ctx) {
    const path = configPath(ctx.io.env);
    ctx.io.out(removeLogin(path) ? `removed ${path}\n` : `no login kept (${path})\n`);
    return Promise.resolve();
  },
};

const whoami: Leaf = {
  kind: 'leaf',
  name: 'whoami',
  summary: 'the account your token belongs to, and which exchange',
  example: 'gpux whoami --json',
  async run(ctx) {
    const api = ctx.api();
    const who = await identify(api);
    if (ctx.json) ctx.io.out(json(identityJson(who)));
    else ctx.io.out(identityText(who, ctx, [['exchange', api.url]]));
  },
};

const balance = endpoint({
  name: 'balance',
  summary: "your account's balance and credit limit",
  example: 'gpux balance',
  call: (c) => c.GET('/v1/account'),
  show: showBalance,
});

const transactions = endpoint({
  name: 'transactions',
  summary: "your account's ledger rows, newest first",
  example: 'gpux transactions --limit 50',
  options: PAGING,
  call: (c, a) =>
    c.GET('/v1/account/transactions', {
      params: { query: given<Query<'/v1/account/transactions'>>(paging(a)) },
    }),
  show: showTransactions,
});

const rotate: Leaf = {
  kind: 'leaf',
  name: 'rotate',
  summary: 'replace your API token with a new one; the old one stops working at once',
  example: 'gpux token rotate',
  async run(ctx) {
    const login = resolveLogin(ctx.io.env);
    const api = ctx.api();
    const r = await api.read(api.client.POST('/v1/account/token/rotate'));
    // A token kept by gpux login is replaced where it is kept; one given in
    // the environment is printed, since gpux cannot change the environment.
    const kept = login.tokenFrom === 'config';
    // The kept URL stays, even when GPUX_URL points this run elsewhere.
    if (kept)
      writeLogin(login.path, { url: readLogin(login.path)?.url ?? login.url, token: r.token });
    if (ctx.json) {
      ctx.io.out(json(r));
      return;
    }
    ctx.io.out(
      kept
        ? `new token ${r.token_id} kept in ${login.path}; token ${r.replaced_token_id} no longer works\n`
        : `new token ${r.token_id} (token ${r.replaced_token_id} no longer works):\n${r.token}\nset GPUX_API_TOKEN to it\n`,
    );
  },
};

const token: Group = group('token', 'your API token', 'gpux token rotate', [rotate]);

export const ACCOUNT_COMMANDS: readonly (Leaf | Group)[] = [
  login,
  logout,
  whoami,
  balance,
  transactions,
  token,
];
