// POST /v1/orders as its schema validates it (service spec Endpoints; D5,
// D6, D9, D14, D31): one definition for the request's check, its type in
// orders/intake.ts, and the OpenAPI document.

import {
  GPU_TYPES,
  GPUS_PER_NODE,
  MAX_DURATION_HOURS,
  ORDER_TYPES,
  SIDES,
  ZONES,
} from '@gpux/shared';
import { Type } from '@sinclair/typebox';
import type { Static } from '@sinclair/typebox';

import { StringEnum } from '../http/schema.js';

export const OrderRequestSchema = Type.Object(
  {
    side: StringEnum(SIDES),
    gpu_type: StringEnum(GPU_TYPES),
    // D5: whole 8-GPU nodes; anything else is invalid_request, never rounded.
    gpu_count: Type.Integer({ minimum: GPUS_PER_NODE, maximum: 80_000, multipleOf: 8 }),
    zone: StringEnum(ZONES),
    duration_hours: Type.Integer({ minimum: 1, maximum: MAX_DURATION_HOURS }),
    order_type: Type.Optional(StringEnum(ORDER_TYPES)),
    // Dollars per GPU-hour, parsed exactly to cents in intake (D1).
    limit_price: Type.Optional(Type.Number()),
    start_time: Type.Optional(Type.String({ minLength: 1, maxLength: 40 })),
    flexible_window_hours: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_DURATION_HOURS })),
    // D9: buys are all-or-nothing unless they opt in.
    allow_partial: Type.Optional(Type.Boolean()),
    // D31: which of the seller's clusters offers the nodes.
    cluster_id: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
  },
  { title: 'CreateOrder', additionalProperties: false },
);

export type OrderRequest = Static<typeof OrderRequestSchema>;
