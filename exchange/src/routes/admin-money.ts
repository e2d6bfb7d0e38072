// The operators' money calls (issue 21, docs/api/admin.md):
//   GET  /v1/admin/accounts/{id}/transactions  any account's ledger rows, paged (D33)
//   POST /v1/admin/accounts/{id}/adjustments   a credit or correction against the platform's account
//   POST /v1/admin/accounts/{id}/payouts       a provider's earnings paid out
// Each posting is balanced (D3) and written with its audit row in one
// statement of one transaction (admin/money.ts).

import {
  MAX_CENTS,
  fieldError,
  formatDollars,
  parseDollars,
  parsePositiveDollars,
} from '@gpux/shared';
import type { FastifyPluginCallbackTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';

import { adminAccountOf } from '../admin/accounts.js';
import { reasonOf } from '../admin/audit.js';
import { postAdjustment, postPayout } from '../admin/money.js';
import type { Posted } from '../admin/money.js';
import { operatorOf } from '../auth/authenticate.js';
import { Dollars, IdParams, PageQuery, StringEnum } from '../http/schema.js';
import { entriesOf } from '../ledger/ledger.js';
import type { RouteContext } from '../services.js';
import { TransactionsSchema, transactionsView } from '../views/accounts.js';
import { Reason } from '../views/admin.js';

const AdjustmentBody = Type.Object(
  {
    amount: Type.Number({
      minimum: -MAX_CENTS / 100,
      maximum: MAX_CENTS / 100,
      description:
        'Dollars in whole cents, not 0: positive credits the account (an outage credit, a goodwill refund), negative debits it (a correction). The platform’s account takes the other side.',
      examples: [25],
    }),
    reason: Reason(),
  },
  { title: 'AdminAdjustment', additionalProperties: false },
);

const PayoutBody = Type.Object(
  {
    amount: Type.Number({
      exclusiveMinimum: 0,
      maximum: MAX_CENTS / 100,
      description:
        'Dollars in whole cents, > 0: paid out of the account’s balance, at most all of it.',
      examples: [1200],
    }),
    reason: Reason(),
  },
  { title: 'AdminPayout', additionalProperties: false },
);

const PostingSchema = Type.Object(
  {
    transaction_id: Type.String(),
    transaction_kind: StringEnum(['adjustment', 'payout'] as const),
    account_id: Type.String(),
    amount: Dollars('The account’s side: positive credits it, negative debits it.'),
    balance_before: Dollars('The account’s balance before the posting.'),
    balance: Dollars('The account’s balance after it.'),
  },
  { title: 'AdminPosting', description: 'A balanced ledger posting an operator made.' },
);

function postingView(p: Posted): {
  transaction_id: string;
  transaction_kind: 'adjustment' | 'payout';
  account_id: string;
  amount: number;
  balance_before: number;
  balance: number;
} {
  return {
    transaction_id: p.transactionId,
    transaction_kind: p.kind === 'payout' ? 'payout' : 'adjustment',
    account_id: p.accountId,
    amount: formatDollars(p.amountCents),
    balance_before: formatDollars(p.balanceBeforeCents),
    balance: formatDollars(p.balanceAfterCents),
  };
}

export const adminMoneyRoutes: FastifyPluginCallbackTypebox<{ ctx: RouteContext }> = (
  app,
  { ctx },
  done,
) => {
  app.get(
    '/v1/admin/accounts/:id/transactions',
    {
      config: { access: 'admin', errors: ['not_found'] },
      schema: {
        summary: 'Any account’s ledger rows, newest first',
        tags: ['admin'],
        params: IdParams,
        querystring: PageQuery,
        response: { 200: TransactionsSchema },
      },
    },
    async (request) => {
      const { id } = request.params;
      await adminAccountOf(ctx.db, id); // not_found for an unknown account
      const { limit, offset } = request.query;
      return transactionsView(await entriesOf(ctx.db, id, limit, offset), limit, offset);
    },
  );

  app.post(
    '/v1/admin/accounts/:id/adjustments',
    {
      config: { access: 'admin', errors: ['not_found'] },
      schema: {
        summary: 'Credit (or debit) an account against the platform’s account',
        tags: ['admin'],
        params: IdParams,
        body: AdjustmentBody,
        response: { 201: PostingSchema },
      },
    },
    async (request, reply) => {
      const { id } = request.params;
      const reason = reasonOf(request.body.reason);
      const { amount } = request.body;
      // Whole cents either way; 0 moves nothing.
      const cents = parseDollars(Math.abs(amount), 'amount');
      if (cents === 0) throw fieldError('amount', 'invalid', 'amount must not be 0');
      const signed = amount < 0 ? -cents : cents;
      const posted = await ctx.db.transaction((tx) =>
        postAdjustment(tx, operatorOf(request), id, signed, reason),
      );
      request.log.info(
        { account_id: id, transaction_id: posted.transactionId, amount_cents: signed },
        'account adjusted',
      );
      return reply.code(201).send(postingView(posted));
    },
  );

  app.post(
    '/v1/admin/accounts/:id/payouts',
    {
      config: { access: 'admin', errors: ['not_found', 'insufficient_funds'] },
      schema: {
        summary: 'Record a payout of an account’s earnings',
        tags: ['admin'],
        params: IdParams,
        body: PayoutBody,
        response: { 201: PostingSchema },
      },
    },
    async (request, reply) => {
      const { id } = request.params;
      const reason = reasonOf(request.body.reason);
      const cents = parsePositiveDollars(request.body.amount, 'amount');
      const posted = await ctx.db.transaction((tx) =>
        postPayout(tx, operatorOf(request), id, cents, reason),
      );
      request.log.info(
        { account_id: id, transaction_id: posted.transactionId, amount_cents: cents },
        'payout recorded',
      );
      return reply.code(201).send(postingView(posted));
    },
  );

  done();
};
