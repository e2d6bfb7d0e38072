// POST /v1/admin/accounts (D31) and GET /v1/account (D33).

import { TOKEN_SCOPES, formatDollars, parseDollars } from '@gpux/shared';
import type { TokenScope } from '@gpux/shared';
import type { FastifyInstance } from 'fastify';

import { accountView, createAccount } from '../accounts/accounts.js';
import { entriesOf } from '../ledger/ledger.js';
import { PAGE_QUERY } from './paging.js';
import type { PageQuery } from './paging.js';
import { adminOnly, callerOf, requireScope } from '../auth/authenticate.js';
import type { RouteContext } from '../services.js';

const NAME = { type: 'string', minLength: 1, maxLength: 200 } as const;

const createAccountBody = {
  type: 'object',
  additionalProperties: false,
  required: ['name', 'organization', 'scopes'],
  properties: {
    name: NAME,
    organization: NAME,
    scopes: {
      type: 'array',
      minItems: 1,
      uniqueItems: true,
      items: { type: 'string', enum: [...TOKEN_SCOPES] },
    },
    // Dollars (D1), parsed exactly in the handler.
    credit_limit: { type: ['number', 'null'] },
  },
} as const;

interface CreateAccountBody {
  name: string;
  organization: string;
  scopes: TokenScope[];
  credit_limit?: number | null;
}

export function accountRoutes(
  app: FastifyInstance,
  { db, adminToken, limiter, directory }: RouteContext,
): void {
  app.post<{ Body: CreateAccountBody }>(
    '/v1/admin/accounts',
    {
      schema: { body: createAccountBody },
      preValidation: adminOnly(adminToken),
    },
    async (request, reply) => {
      const { name, organization, scopes, credit_limit } = request.body;
      const creditLimitCents =
        credit_limit === undefined || credit_limit === null
          ? undefined
          : parseDollars(credit_limit, 'credit_limit');
      const created = await db.transaction((tx) =>
        createAccount(tx, { name, organization, scopes, creditLimitCents }),
      );
      return reply.code(201).send({
        account_id: created.accountId,
        organization: created.organization,
        organization_id: created.organizationId,
        scopes: created.scopes,
        token: created.token,
      });
    },
  );

  app.get(
    '/v1/account',
    { preValidation: requireScope(directory, limiter, 'read') },
    async (request) => {
      const a = await accountView(db, callerOf(request).accountId);
      return {
        account_id: a.accountId,
        name: a.name,
        organization: a.organization,
        organization_id: a.organizationId,
        balance: formatDollars(a.balanceCents),
        credit_limit: a.creditLimitCents === null ? null : formatDollars(a.creditLimitCents),
        created_at: a.createdAt.toISOString(),
      };
    },
  );

  app.get<{ Querystring: PageQuery }>(
    '/v1/account/transactions',
    {
      schema: {
        querystring: { type: 'object', additionalProperties: false, properties: PAGE_QUERY },
      },
      preValidation: requireScope(directory, limiter, 'read'),
    },
    async (request) => {
      const { limit, offset } = request.query;
      const { entries, total } = await entriesOf(db, callerOf(request).accountId, limit, offset);
      return {
        transactions: entries.map((e) => ({
          transaction_id: e.transactionId,
          transaction_kind: e.transactionKind,
          kind: e.kind,
          amount: formatDollars(e.amountCents),
          order_id: e.orderId,
          lease_id: e.leaseId,
          created_at: e.createdAt.toISOString(),
        })),
        total,
        limit,
        offset,
      };
    },
  );
}
