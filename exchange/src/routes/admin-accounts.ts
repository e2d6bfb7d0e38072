// The operators' API for accounts and tokens (issue 21, docs/api/admin.md):
//   GET  /v1/admin/accounts                          list, filtered, paged
//   GET  /v1/admin/accounts/{id}                     one, with balance and credit limit
//   POST /v1/admin/accounts/{id}/credit-limit        change the credit limit (D3)
//   POST /v1/admin/accounts/{id}/suspend             every token refused, open orders cancelled
//   POST /v1/admin/accounts/{id}/reinstate           its tokens work again
//   GET  /v1/admin/accounts/{id}/tokens              its tokens, without secrets (D24)
//   POST /v1/admin/accounts/{id}/tokens              a new token, shown once
//   POST /v1/admin/accounts/{id}/tokens/{token_id}/revoke
// Every change needs a reason and writes an audit row in its transaction
// (admin/audit.ts); cached principals it makes stale are dropped as soon as
// it has committed (accounts/directory.ts).

import { MAX_CENTS, TOKEN_SCOPES, parseDollars } from '@gpux/shared';
import type { FastifyPluginCallbackTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';

import {
  ACCOUNT_STATUSES,
  adminAccountOf,
  issueToken,
  listAccounts,
  revokeToken,
  setCreditLimit,
  setSuspended,
  tokensOf,
} from '../admin/accounts.js';
import { reasonOf } from '../admin/audit.js';
import { operatorOf } from '../auth/authenticate.js';
import { IdParams, Nullable, PAGE_QUERY, StringEnum } from '../http/schema.js';
import type { RouteContext } from '../services.js';
import {
  AdminAccountListSchema,
  AdminAccountSchema,
  IssuedTokenSchema,
  Reason,
  SuspensionSchema,
  TokenListSchema,
  TokenSchema,
  adminAccountView,
  tokenJson,
} from '../views/admin.js';

const ListAccountsQuery = Type.Object(
  {
    organization: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 200,
        description: 'The organization’s name or id.',
      }),
    ),
    scope: Type.Optional(
      StringEnum(TOKEN_SCOPES, {
        description:
          'Accounts with a live token holding this scope; admin lists the personal operator accounts.',
      }),
    ),
    status: Type.Optional(StringEnum(ACCOUNT_STATUSES)),
    ...PAGE_QUERY,
  },
  { additionalProperties: false },
);

const ReasonBody = Type.Object(
  { reason: Reason() },
  { title: 'AdminReason', additionalProperties: false },
);

const CreditLimitBody = Type.Object(
  {
    credit_limit: Nullable(
      Type.Number({
        minimum: 0,
        maximum: MAX_CENTS / 100,
        description:
          'Dollars in whole cents: how far below zero the balance may go; null for no limit.',
      }),
    ),
    reason: Reason(),
  },
  { title: 'CreditLimitChange', additionalProperties: false },
);

const IssueTokenBody = Type.Object(
  {
    scopes: Type.Array(StringEnum(TOKEN_SCOPES), { minItems: 1, uniqueItems: true }),
    reason: Reason(),
  },
  { title: 'IssueToken', additionalProperties: false },
);

const TokenParams = Type.Object(
  {
    id: Type.String({ minLength: 1, maxLength: 64 }),
    token_id: Type.String({ minLength: 1, maxLength: 64 }),
  },
  { additionalProperties: false },
);

export const adminAccountRoutes: FastifyPluginCallbackTypebox<{ ctx: RouteContext }> = (
  app,
  { ctx },
  done,
) => {
  app.get(
    '/v1/admin/accounts',
    {
      config: { access: 'admin' },
      schema: {
        summary: 'List accounts, by organization, scope and status',
        tags: ['admin'],
        querystring: ListAccountsQuery,
        response: { 200: AdminAccountListSchema },
      },
    },
    async (request) => {
      const { organization, scope, status, limit, offset } = request.query;
      const page = await listAccounts(ctx.db, { organization, scope, status, limit, offset });
      return { accounts: page.rows.map(adminAccountView), total: page.total, limit, offset };
    },
  );

  app.get(
    '/v1/admin/accounts/:id',
    {
      config: { access: 'admin', errors: ['not_found'] },
      schema: {
        summary: 'Read an account with its balance, credit limit and status',
        tags: ['admin'],
        params: IdParams,
        response: { 200: AdminAccountSchema },
      },
    },
    async (request) => adminAccountView(await adminAccountOf(ctx.db, request.params.id)),
  );

  app.post(
    '/v1/admin/accounts/:id/credit-limit',
    {
      config: { access: 'admin', errors: ['not_found'] },
      schema: {
        summary: 'Change an account’s credit limit',
        tags: ['admin'],
        params: IdParams,
        body: CreditLimitBody,
        response: { 200: AdminAccountSchema },
      },
    },
    async (request) => {
      const { id } = request.params;
      const reason = reasonOf(request.body.reason);
      const limit = request.body.credit_limit;
      const cents = limit === null ? null : parseDollars(limit, 'credit_limit');
      const changed = await ctx.db.transaction((tx) =>
        setCreditLimit(tx, operatorOf(request), id, cents, reason),
      );
      // Orders check the limit of the caller's principal: the new one from now on.
      ctx.directory.forgetAccount(id);
      if (changed)
        request.log.info({ account_id: id, credit_limit: limit }, 'credit limit changed');
      return adminAccountView(await adminAccountOf(ctx.db, id));
    },
  );

  app.post(
    '/v1/admin/accounts/:id/suspend',
    {
      config: { access: 'admin', errors: ['not_found'] },
      schema: {
        summary: 'Suspend an account: its tokens refused at once, its open orders cancelled',
        tags: ['admin'],
        params: IdParams,
        body: ReasonBody,
        response: { 200: SuspensionSchema },
      },
    },
    async (request) => {
      const { id } = request.params;
      const reason = reasonOf(request.body.reason);
      const changed = await ctx.db.transaction((tx) =>
        setSuspended(tx, operatorOf(request), id, true, reason),
      );
      // Every token of it is refused from the next request on.
      ctx.directory.forgetAccount(id);
      // Through each book's writer, as a customer's cancel; asked again on a
      // repeated suspend, so a suspension whose sweep was cut short finishes.
      const cancelled = await ctx.market.cancelAccountOrders(id);
      request.log.info(
        { account_id: id, changed, cancelled_orders: cancelled.length },
        'account suspended',
      );
      return {
        account: adminAccountView(await adminAccountOf(ctx.db, id)),
        cancelled_order_ids: cancelled,
      };
    },
  );

  app.post(
    '/v1/admin/accounts/:id/reinstate',
    {
      config: { access: 'admin', errors: ['not_found'] },
      schema: {
        summary: 'Reinstate a suspended account: its live tokens work again',
        tags: ['admin'],
        params: IdParams,
        body: ReasonBody,
        response: { 200: AdminAccountSchema },
      },
    },
    async (request) => {
      const { id } = request.params;
      const reason = reasonOf(request.body.reason);
      const changed = await ctx.db.transaction((tx) =>
        setSuspended(tx, operatorOf(request), id, false, reason),
      );
      ctx.directory.forgetAccount(id);
      ctx.market.reinstated(id);
      request.log.info({ account_id: id, changed }, 'account reinstated');
      return adminAccountView(await adminAccountOf(ctx.db, id));
    },
  );

  app.get(
    '/v1/admin/accounts/:id/tokens',
    {
      config: { access: 'admin', errors: ['not_found'] },
      schema: {
        summary: 'An account’s API tokens, live and revoked, without their secrets',
        tags: ['admin'],
        params: IdParams,
        response: { 200: TokenListSchema },
      },
    },
    async (request) => ({ tokens: (await tokensOf(ctx.db, request.params.id)).map(tokenJson) }),
  );

  app.post(
    '/v1/admin/accounts/:id/tokens',
    {
      config: { access: 'admin', errors: ['not_found'] },
      schema: {
        summary: 'Issue a new API token for an account (shown once)',
        tags: ['admin'],
        params: IdParams,
        body: IssueTokenBody,
        response: { 201: IssuedTokenSchema },
      },
    },
    async (request, reply) => {
      const { id } = request.params;
      const reason = reasonOf(request.body.reason);
      const issued = await ctx.db.transaction((tx) =>
        issueToken(tx, operatorOf(request), id, request.body.scopes, reason),
      );
      request.log.info({ account_id: id, token_id: issued.tokenId }, 'token issued');
      return reply.code(201).send({ ...tokenJson(issued), revoked_at: null, token: issued.token });
    },
  );

  app.post(
    '/v1/admin/accounts/:id/tokens/:token_id/revoke',
    {
      config: { access: 'admin', errors: ['not_found'] },
      schema: {
        summary: 'Revoke one API token of an account, at once',
        tags: ['admin'],
        params: TokenParams,
        body: ReasonBody,
        response: { 200: TokenSchema },
      },
    },
    async (request) => {
      const { id, token_id } = request.params;
      const reason = reasonOf(request.body.reason);
      const { token, changed } = await ctx.db.transaction((tx) =>
        revokeToken(tx, operatorOf(request), id, token_id, reason),
      );
      // Refused from the next request on, not after the cache's while.
      ctx.directory.forgetToken(token_id);
      request.log.info({ account_id: id, token_id, changed }, 'token revoked');
      return tokenJson(token);
    },
  );

  done();
};
