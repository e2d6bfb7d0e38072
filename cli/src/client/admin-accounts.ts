// `gpux admin accounts …` and `gpux admin tokens …`: the operators'
// account, token and money endpoints (docs/api/admin.md). One entry per
// endpoint: its command line, its typed call, its human output.

import { every } from './api.js';
import type { Body, Query, Schemas } from './api.js';
import { byId, endpoint, given, group, idAndReason } from './command.js';
import type { ArgSpec, Group } from './command.js';
import { PAGING, dollars, dollarsOrNone, listOf, paging } from './parse.js';
import {
  showAdminAccount,
  showAdminAccounts,
  showCreatedAccount,
  showIssuedToken,
  showPosting,
  showSuspension,
  showToken,
  showTokens,
} from './render-admin.js';
import { showTransactions } from './render.js';

export type Scope = Schemas['AdminAccount']['scopes'][number];
export const SCOPES = every<Scope>()(['trade', 'read', 'leases', 'provider', 'admin']);
type Status = Schemas['AdminAccount']['status'];
const STATUSES = every<Status>()(['active', 'suspended']);

const ACCOUNT: ArgSpec = ['<account-id>', 'the account (acc_…)'];

const accounts: Group = group(
  'accounts',
  'accounts: find and read them, credit limits, suspensions, their ledger, adjustments and payouts',
  'gpux admin accounts list --organization acme --status active',
  [
    endpoint({
      name: 'list',
      summary: 'accounts, newest first, by organization, scope and status',
      example: 'gpux admin accounts list --scope admin',
      options: [
        { flags: '--organization <name-or-id>', description: "the organization's name or id" },
        {
          flags: '--scope <scope>',
          description: 'accounts with a live token holding it',
          choices: SCOPES,
        },
        { flags: '--status <status>', description: 'active or suspended', choices: STATUSES },
        ...PAGING,
      ],
      call: (c, a) =>
        c.GET('/v1/admin/accounts', {
          params: {
            query: given<Query<'/v1/admin/accounts'>>({
              organization: a.opt('organization'),
              scope: a.opt<Scope>('scope'),
              status: a.opt<Status>('status'),
              ...paging(a),
            }),
          },
        }),
      show: showAdminAccounts,
    }),
    endpoint({
      name: 'show',
      args: [ACCOUNT],
      summary: 'one account with its status, scopes, balance and credit limit',
      example: 'gpux admin accounts show acc_1a2b3c',
      call: (c, a) => c.GET('/v1/admin/accounts/{id}', byId(a.arg(0))),
      show: showAdminAccount,
    }),
    endpoint({
      name: 'create',
      summary: 'a new account and its first token (shown once)',
      example:
        'gpux admin accounts create --name alice --organization acme --scopes trade,read,leases',
      options: [
        { flags: '--name <name>', description: "the account's name", required: true },
        {
          flags: '--organization <name>',
          description: 'its organization (made if new)',
          required: true,
        },
        {
          flags: '--scopes <list>',
          description: `its token's scopes, comma-separated: ${SCOPES.join(', ')}`,
          parse: listOf(SCOPES),
          required: true,
        },
        {
          flags: '--credit-limit <dollars>',
          description: 'how far below zero its balance may go',
          parse: dollars,
        },
      ],
      reason: 'optional',
      call: (c, a) =>
        c.POST('/v1/admin/accounts', {
          body: given<Body<'/v1/admin/accounts'>>({
            name: a.opt('name'),
            organization: a.opt('organization'),
            scopes: a.opt<Scope[]>('scopes'),
            credit_limit: a.opt<number>('creditLimit'),
            reason: a.reason,
          }),
        }),
      show: showCreatedAccount,
    }),
    endpoint({
      name: 'credit-limit',
      args: [ACCOUNT, ['<dollars>', 'the new limit in dollars, or none', dollarsOrNone]],
      summary: "change how far below zero the account's balance may go",
      example: 'gpux admin accounts credit-limit acc_1a2b3c 5000 --reason "signed contract"',
      reason: 'required',
      call: (c, a) =>
        c.POST('/v1/admin/accounts/{id}/credit-limit', {
          ...byId(a.arg(0)),
          body: { credit_limit: a.value<number | null>(1), reason: a.reason ?? '' },
        }),
      show: showAdminAccount,
    }),
    endpoint({
      name: 'suspend',
      args: [ACCOUNT],
      summary: 'refuse every token of the account at once and cancel its open orders',
      example: 'gpux admin accounts suspend acc_1a2b3c --reason "chargeback under review"',
      reason: 'required',
      call: (c, a) => c.POST('/v1/admin/accounts/{id}/suspend', idAndReason(a)),
      show: showSuspension,
    }),
    endpoint({
      name: 'reinstate',
      args: [ACCOUNT],
      summary: "let the account's live tokens work again",
      example: 'gpux admin accounts reinstate acc_1a2b3c --reason "chargeback withdrawn"',
      reason: 'required',
      call: (c, a) => c.POST('/v1/admin/accounts/{id}/reinstate', idAndReason(a)),
      show: showAdminAccount,
    }),
    endpoint({
      name: 'transactions',
      args: [ACCOUNT],
      summary: "the account's ledger rows, newest first",
      example: 'gpux admin accounts transactions acc_1a2b3c --limit 50',
      options: PAGING,
      call: (c, a) =>
        c.GET('/v1/admin/accounts/{id}/transactions', {
          params: {
            path: { id: a.arg(0) },
            query: given<Query<'/v1/admin/accounts/{id}/transactions'>>(paging(a)),
          },
        }),
      show: showTransactions,
    }),
    endpoint({
      name: 'adjust',
      args: [ACCOUNT],
      summary: 'credit (positive) or debit (negative) the account against the platform',
      example:
        'gpux admin accounts adjust acc_1a2b3c --amount 25 --reason "outage credit, incident 42"',
      options: [
        {
          flags: '--amount <dollars>',
          description: 'dollars in whole cents, not 0; negative debits (--amount=-5)',
          parse: dollars,
          required: true,
        },
      ],
      reason: 'required',
      call: (c, a) =>
        c.POST('/v1/admin/accounts/{id}/adjustments', {
          ...byId(a.arg(0)),
          body: { amount: a.opt<number>('amount') ?? 0, reason: a.reason ?? '' },
        }),
      show: showPosting,
    }),
    endpoint({
      name: 'payout',
      args: [ACCOUNT],
      summary: "record that the account's earnings were paid out of the exchange",
      example: 'gpux admin accounts payout acc_9z8y7x --amount 1200 --reason "wire 2026-05-01"',
      options: [
        {
          flags: '--amount <dollars>',
          description: 'dollars in whole cents, > 0',
          parse: dollars,
          required: true,
        },
      ],
      reason: 'required',
      call: (c, a) =>
        c.POST('/v1/admin/accounts/{id}/payouts', {
          ...byId(a.arg(0)),
          body: { amount: a.opt<number>('amount') ?? 0, reason: a.reason ?? '' },
        }),
      show: showPosting,
    }),
  ],
);

const tokens: Group = group(
  'tokens',
  "an account's API tokens: list, issue a new one, revoke one",
  'gpux admin tokens list acc_1a2b3c',
  [
    endpoint({
      name: 'list',
      args: [ACCOUNT],
      summary: "the account's tokens, live and revoked, newest first",
      example: 'gpux admin tokens list acc_1a2b3c',
      call: (c, a) => c.GET('/v1/admin/accounts/{id}/tokens', byId(a.arg(0))),
      show: showTokens,
    }),
    endpoint({
      name: 'issue',
      args: [ACCOUNT],
      summary: 'a new token for the account (shown once)',
      example: 'gpux admin tokens issue acc_1a2b3c --scopes trade,read --reason "old token leaked"',
      options: [
        {
          flags: '--scopes <list>',
          description: `comma-separated: ${SCOPES.join(', ')}`,
          parse: listOf(SCOPES),
          required: true,
        },
      ],
      reason: 'required',
      call: (c, a) =>
        c.POST('/v1/admin/accounts/{id}/tokens', {
          ...byId(a.arg(0)),
          body: { scopes: a.opt<Scope[]>('scopes') ?? [], reason: a.reason ?? '' },
        }),
      show: showIssuedToken,
    }),
    endpoint({
      name: 'revoke',
      args: [ACCOUNT, ['<token-id>', 'the token (tok_…)']],
      summary: 'refuse the token from its next request on',
      example:
        'gpux admin tokens revoke acc_1a2b3c tok_4d5e6f --reason "leaked in a public repository"',
      reason: 'required',
      call: (c, a) =>
        c.POST('/v1/admin/accounts/{id}/tokens/{token_id}/revoke', {
          params: { path: { id: a.arg(0), token_id: a.arg(1) } },
          body: { reason: a.reason ?? '' },
        }),
      show: showToken,
    }),
  ],
);

export const ACCOUNT_GROUPS: readonly Group[] = [accounts, tokens];
