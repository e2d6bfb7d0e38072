// Webhook endpoints and their deliveries as the API shows them
// (docs/api/webhooks.md). The secret is in the registration's answer only.

import { Type } from '@sinclair/typebox';
import type { Static } from '@sinclair/typebox';

import { ACCOUNT_EVENT_KINDS } from '../account-events/events.js';
import { Nullable, PAGE_FIELDS, StringEnum, Timestamp } from '../http/schema.js';
import type { DeliveryRow, EndpointRow } from '../webhooks/endpoints.js';
import { iso } from './format.js';

const WEBHOOK_FIELDS = {
  id: Type.String({ description: 'whk_…' }),
  url: Type.String(),
  events: Type.Array(StringEnum(ACCOUNT_EVENT_KINDS), {
    description: 'The kinds of the account’s events delivered.',
  }),
  created_at: Timestamp(),
};

export const WebhookSchema = Type.Object(WEBHOOK_FIELDS, { title: 'Webhook' });
export type WebhookJson = Static<typeof WebhookSchema>;

export const CreatedWebhookSchema = Type.Object(
  {
    ...WEBHOOK_FIELDS,
    secret: Type.String({
      description:
        'whsec_…: the key of the deliveries’ signatures. Shown this once: keep it (docs/api/webhooks.md).',
    }),
  },
  { title: 'CreatedWebhook' },
);

export const WebhookListSchema = Type.Object(
  { webhooks: Type.Array(WebhookSchema, { description: 'Newest first.' }) },
  { title: 'WebhookList' },
);

export const WebhookDeletedSchema = Type.Object(
  { webhook_id: Type.String(), deleted: Type.Literal(true) },
  { title: 'WebhookDeleted' },
);

const AttemptSchema = Type.Object(
  {
    attempt: Type.Integer({ minimum: 1 }),
    at: Timestamp(),
    status_code: Nullable(
      Type.Integer({ description: 'The receiver’s HTTP status; null when none came.' }),
    ),
    error: Nullable(
      Type.String({ description: 'Why it was not delivered (not a 2xx, or no answer).' }),
    ),
    duration_ms: Type.Integer({ minimum: 0 }),
  },
  { title: 'WebhookAttempt' },
);

export const DeliverySchema = Type.Object(
  {
    id: Type.String({ description: 'whd_…: also the Gpux-Delivery-Id header.' }),
    event_id: Type.String({ description: 'evt_…: the Gpux-Event-Id header.' }),
    type: Type.String({ description: 'The event’s kind, or webhook.test.' }),
    seq: Nullable(Type.Integer({ description: 'The account’s event number; null for a test.' })),
    status: StringEnum(['pending', 'delivered', 'failed']),
    next_attempt_at: Nullable(Timestamp('Pending: when it is tried next.')),
    created_at: Timestamp(),
    finished_at: Nullable(Timestamp('Delivered or failed: when.')),
    attempts: Type.Array(AttemptSchema),
  },
  { title: 'WebhookDelivery' },
);

export const DeliveryListSchema = Type.Object(
  { deliveries: Type.Array(DeliverySchema, { description: 'Newest first.' }), ...PAGE_FIELDS },
  { title: 'WebhookDeliveryList' },
);

export const TestQueuedSchema = Type.Object(
  { delivery_id: Type.String({ description: 'The test delivery, queued.' }) },
  { title: 'WebhookTestQueued' },
);

export function webhookView(r: EndpointRow): WebhookJson {
  return {
    id: r.id,
    url: r.url,
    events: r.kinds as WebhookJson['events'],
    created_at: iso(r.created_ms),
  };
}

export function deliveryView(d: DeliveryRow): Static<typeof DeliverySchema> {
  return {
    id: d.id,
    event_id: d.event_id,
    type: d.kind,
    seq: d.seq,
    status: d.status,
    next_attempt_at: d.next_attempt_ms === null ? null : iso(Number(d.next_attempt_ms)),
    created_at: iso(d.created_ms),
    finished_at: d.finished_ms === null ? null : iso(Number(d.finished_ms)),
    attempts: d.tries.map((a) => ({
      attempt: a.attempt,
      at: iso(a.at_ms),
      status_code: a.status_code,
      error: a.error,
      duration_ms: a.duration_ms,
    })),
  };
}
