// POST /v1/orders as its schema validates it (service spec Endpoints; D5,
// D6, D9, D14, D31): one definition for the request's check, its type in
// orders/intake.ts, and the OpenAPI document.

import { GPU_TYPES, MAX_DURATION_HOURS, ORDER_TYPES, SIDES, ZONES } from '@gpux/shared';
import { Type } from '@sinclair/typebox';
import type { Static } from '@sinclair/typebox';

import { GpuCount, Price, StringEnum, Timestamp } from '../http/schema.js';

export const OrderRequestSchema = Type.Object(
  {
    side: StringEnum(SIDES),
    gpu_type: StringEnum(GPU_TYPES),
    // D5: whole 8-GPU nodes; anything else is invalid_request, never rounded.
    gpu_count: GpuCount(),
    zone: StringEnum(ZONES),
    duration_hours: Type.Integer({
      minimum: 1,
      maximum: MAX_DURATION_HOURS,
      description: 'Buys: the lease’s length. Sells: the window, from start_time, to lease in.',
    }),
    // D6: limit for sells and for buys with a limit_price, else market.
    order_type: Type.Optional(
      StringEnum(ORDER_TYPES, {
        description:
          'Default: limit for sells and for buys with a limit_price, else market. Sells are limit orders.',
      }),
    ),
    // Parsed exactly to cents in intake (D1); required by limit orders and sells (D6).
    limit_price: Type.Optional(
      Price('Required by limit orders and sells; a market order takes none.'),
    ),
    // D13: in the future, the order waits for it.
    start_time: Type.Optional(
      Timestamp('When the order may start filling (default: now); at most 720 h ahead.'),
    ),
    // D14: buys only.
    flexible_window_hours: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: MAX_DURATION_HOURS,
        description: 'Buys only: may fill any time in [start_time, start_time + this].',
      }),
    ),
    // D9: buys are all-or-nothing unless they opt in.
    allow_partial: Type.Optional(
      Type.Boolean({ description: 'Buys only: may fill in part (default: all or nothing).' }),
    ),
    // D31: which of the seller's clusters offers the nodes.
    cluster_id: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 64,
        description:
          'Sells only: the seller’s cluster offering the nodes; needed when it has several of that GPU type and zone.',
      }),
    ),
  },
  { title: 'CreateOrder', additionalProperties: false },
);

export type OrderRequest = Static<typeof OrderRequestSchema>;
