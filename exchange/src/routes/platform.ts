// GET /v1/admin/platform and GET /v1/admin/platform/transactions: the
// platform's own account (D2: both fees go there) for operators. Its ledger
// rows page like GET /v1/account/transactions (D33, D21).

import type { FastifyPluginCallbackTypebox } from '@fastify/type-provider-typebox';

import { PageQuery } from '../http/schema.js';
import { PLATFORM_ACCOUNT_ID, entriesOf } from '../ledger/ledger.js';
import { platformTotals } from '../ledger/platform-account.js';
import type { RouteContext } from '../services.js';
import {
  PlatformAccountSchema,
  TransactionsSchema,
  platformAccountView,
  transactionsView,
} from '../views/accounts.js';

export const platformRoutes: FastifyPluginCallbackTypebox<{ ctx: RouteContext }> = (
  app,
  { ctx },
  done,
) => {
  app.get(
    '/v1/admin/platform',
    {
      config: { access: 'admin' },
      schema: {
        summary: 'The platform’s account: balance, fees earned and fees refunded',
        tags: ['admin'],
        response: { 200: PlatformAccountSchema },
      },
    },
    async () => platformAccountView(PLATFORM_ACCOUNT_ID, await platformTotals(ctx.db)),
  );

  app.get(
    '/v1/admin/platform/transactions',
    {
      config: { access: 'admin' },
      schema: {
        summary: 'The platform’s ledger rows, newest first',
        tags: ['admin'],
        querystring: PageQuery,
        response: { 200: TransactionsSchema },
      },
    },
    async (request) => {
      const { limit, offset } = request.query;
      const page = await entriesOf(ctx.db, PLATFORM_ACCOUNT_ID, limit, offset);
      return transactionsView(page, limit, offset);
    },
  );

  done();
};
