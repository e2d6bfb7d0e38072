// POST /v1/admin/accounts (D31), GET /v1/account and
// GET /v1/account/transactions (D33).

import { MAX_CENTS, TOKEN_SCOPES, parseDollars } from '@gpux/shared';
import type { FastifyPluginCallbackTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';

import { accountView, createAccount } from '../accounts/accounts.js';
import { rotateToken } from '../accounts/rotate-token.js';
import { reasonOf, recordAudit } from '../admin/audit.js';
import { callerOf, operatorOf } from '../auth/authenticate.js';
import { forgoIdempotency } from '../auth/idempotency.js';
import { Nullable, PageQuery, StringEnum } from '../http/schema.js';
import { entriesOf } from '../ledger/ledger.js';
import type { RouteContext } from '../services.js';
import {
  AccountSchema,
  CreatedAccountSchema,
  RotatedTokenSchema,
  TransactionsSchema,
  accountJson,
  createdAccountView,
  transactionsView,
} from '../views/accounts.js';
import { Reason } from '../views/admin.js';

const Name = (): ReturnType<typeof Type.String> => Type.String({ minLength: 1, maxLength: 200 });

const CreateAccountBody = Type.Object(
  {
    name: Name(),
    organization: Name(),
    scopes: Type.Array(StringEnum(TOKEN_SCOPES), { minItems: 1, uniqueItems: true }),
    // Dollars (D1), parsed exactly below; D3: how far the account may go negative.
    credit_limit: Type.Optional(
      Nullable(
        Type.Number({
          minimum: 0,
          maximum: MAX_CENTS / 100,
          description:
            'Dollars in whole cents: how far below zero the account’s balance may go; null or absent for no limit.',
        }),
      ),
    ),
    reason: Type.Optional(Reason()),
  },
  { title: 'CreateAccount', additionalProperties: false },
);

export const accountRoutes: FastifyPluginCallbackTypebox<{ ctx: RouteContext }> = (
  app,
  { ctx },
  done,
) => {
  app.post(
    '/v1/admin/accounts',
    {
      config: { access: 'admin' },
      schema: {
        summary: 'Create an account and its first API token',
        tags: ['admin'],
        body: CreateAccountBody,
        response: { 201: CreatedAccountSchema },
      },
    },
    async (request, reply) => {
      const { name, organization, scopes, credit_limit } = request.body;
      const creditLimitCents =
        credit_limit === undefined || credit_limit === null
          ? undefined
          : parseDollars(credit_limit, 'credit_limit');
      const reason = request.body.reason === undefined ? null : reasonOf(request.body.reason);
      const created = await ctx.db.transaction(async (tx) => {
        const a = await createAccount(tx, { name, organization, scopes, creditLimitCents });
        await recordAudit(tx, {
          operator: operatorOf(request),
          action: 'account.create',
          targetType: 'account',
          targetId: a.accountId,
          reason,
          before: null,
          after: {
            name,
            organization: a.organization,
            organization_id: a.organizationId,
            scopes: [...scopes],
            credit_limit: credit_limit ?? null,
            token_id: a.tokenId,
          },
        });
        return a;
      });
      request.log.info({ account_id: created.accountId }, 'account created');
      return reply.code(201).send(createdAccountView(created));
    },
  );

  app.get(
    '/v1/account',
    {
      config: { access: 'customer', scope: 'read', rate: 'query' },
      schema: {
        summary: 'The caller’s account and balance',
        tags: ['account'],
        response: { 200: AccountSchema },
      },
    },
    async (request) => accountJson(await accountView(ctx.db, callerOf(request).accountId)),
  );

  app.post(
    '/v1/account/token/rotate',
    {
      config: { access: 'customer', scope: 'read', rate: 'query' },
      schema: {
        summary: 'Replace the calling token with a new one (shown once); the old one stops at once',
        tags: ['account'],
        response: { 201: RotatedTokenSchema },
      },
    },
    async (request, reply) => {
      const caller = callerOf(request);
      // The answer holds the new secret: never kept as an idempotent answer.
      await forgoIdempotency(request, ctx.db);
      const r = await ctx.db.transaction((tx) => rotateToken(tx, caller.accountId, caller.tokenId));
      // Refused from the next request on, not after the directory's while.
      ctx.directory.forgetToken(r.replacedTokenId);
      request.log.info(
        { account_id: caller.accountId, token_id: r.tokenId, replaced: r.replacedTokenId },
        'token rotated',
      );
      return reply.code(201).send({
        token_id: r.tokenId,
        token: r.token,
        scopes: [...r.scopes],
        created_at: r.createdAt.toISOString(),
        replaced_token_id: r.replacedTokenId,
      });
    },
  );

  app.get(
    '/v1/account/transactions',
    {
      config: { access: 'customer', scope: 'read', rate: 'query' },
      schema: {
        summary: 'The caller’s ledger rows',
        tags: ['account'],
        querystring: PageQuery,
        response: { 200: TransactionsSchema },
      },
    },
    async (request) => {
      const { limit, offset } = request.query;
      const page = await entriesOf(ctx.db, callerOf(request).accountId, limit, offset);
      return transactionsView(page, limit, offset);
    },
  );

  done();
};
