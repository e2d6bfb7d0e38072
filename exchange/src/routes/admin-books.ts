// The operators' market actions (issue 21, docs/api/admin.md "Books"):
//   GET  /v1/admin/books                          every book: open or halted
//   POST /v1/admin/books/{gpu_type}/{zone}/halt   no new orders, no matching, timers wait
//   POST /v1/admin/books/{gpu_type}/{zone}/resume what fell due in the halt happens now
// Both actions go through the book's single writer: the halt, what it
// changes in the book and the audit row commit in one write batch
// (ChangeSet.halts, ChangeSet.audits), so a halt outlives restarts and
// takeovers (book-loader.ts reads it back).

import { GPU_TYPES, ZONES } from '@gpux/shared';
import type { GpuType, Zone } from '@gpux/shared';
import type { FastifyPluginCallbackTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { Static } from '@sinclair/typebox';

import { auditRow, reasonOf } from '../admin/audit.js';
import { operatorOf } from '../auth/authenticate.js';
import { Nullable, StringEnum, Timestamp } from '../http/schema.js';
import type { BookState } from '../market/book-state.js';
import type { RouteContext } from '../services.js';
import { Reason } from '../views/admin.js';
import { iso } from '../views/format.js';
import { BOOK_STATUSES } from '../views/market.js';

const AdminBookSchema = Type.Object(
  {
    gpu_type: StringEnum(GPU_TYPES),
    zone: StringEnum(ZONES),
    status: StringEnum(BOOK_STATUSES, {
      description: 'halted: no new orders (market_halted), nothing matches, timers wait.',
    }),
    halted_at: Nullable(Timestamp('When it was halted; null while open.')),
    open_orders: Type.Integer({
      minimum: 0,
      description: 'Orders open in the book: resting, scheduled or waiting for their start.',
    }),
  },
  { title: 'AdminBook', description: 'One book (GPU type and zone) as operators see it.' },
);
type AdminBookJson = Static<typeof AdminBookSchema>;

const BookParams = Type.Object(
  { gpu_type: StringEnum(GPU_TYPES), zone: StringEnum(ZONES) },
  { additionalProperties: false },
);

const BookActionBody = Type.Object(
  { reason: Reason() },
  { title: 'AdminBookAction', additionalProperties: false },
);

function bookView(state: BookState): AdminBookJson {
  const at = state.haltedAt;
  return {
    gpu_type: state.gpuType,
    zone: state.zone,
    status: at === null ? 'open' : 'halted',
    halted_at: at === null ? null : iso(at),
    open_orders: state.orders.size,
  };
}

const ACTIONS = {
  halt: {
    halted: true,
    audit: 'book.halt',
    summary: 'Halt a book: new orders refused, nothing matches, its timers wait',
    logged: 'book halted by an operator',
  },
  resume: {
    halted: false,
    audit: 'book.resume',
    summary: 'Resume a halted book: what fell due in the halt happens now',
    logged: 'book resumed by an operator',
  },
} as const;

export const adminBookRoutes: FastifyPluginCallbackTypebox<{ ctx: RouteContext }> = (
  app,
  { ctx },
  done,
) => {
  app.get(
    '/v1/admin/books',
    {
      config: { access: 'admin' },
      schema: {
        summary: 'Every book with whether it is halted',
        tags: ['admin'],
        response: {
          200: Type.Object(
            { books: Type.Array(AdminBookSchema, { description: 'By GPU type, then zone.' }) },
            { title: 'AdminBookList' },
          ),
        },
      },
    },
    () => ({
      books: GPU_TYPES.flatMap((g: GpuType) =>
        ZONES.map((z: Zone) => bookView(ctx.market.writer(g, z).view)),
      ),
    }),
  );

  for (const action of ['halt', 'resume'] as const) {
    const a = ACTIONS[action];
    app.post(
      `/v1/admin/books/:gpu_type/:zone/${action}`,
      {
        config: { access: 'admin' },
        schema: {
          summary: a.summary,
          tags: ['admin'],
          params: BookParams,
          body: BookActionBody,
          response: { 200: AdminBookSchema },
        },
      },
      async (request) => {
        const { gpu_type: gpuType, zone } = request.params;
        const reason = reasonOf(request.body.reason);
        const operator = operatorOf(request);
        const { market } = ctx;
        const writer = market.writer(gpuType, zone);
        const changed = await writer.submit((state, changes) => {
          const before = bookView(state);
          if (!state.setHalted(a.halted, market.clock.now(), changes)) return false;
          const after = bookView(state);
          changes.audits.push(
            auditRow({
              operator,
              action: a.audit,
              targetType: 'book',
              targetId: `${gpuType}/${zone}`,
              reason,
              before: { status: before.status, halted_at: before.halted_at },
              after: { status: after.status, halted_at: after.halted_at },
            }),
          );
          return true;
        });
        // Halting a halted book (or resuming an open one) records nothing.
        if (changed) request.log.info({ book: `${gpuType}/${zone}`, reason }, a.logged);
        return bookView(writer.view);
      },
    );
  }
  done();
};
