// `gpux webhooks list|create|delete|deliveries|test` (docs/api/webhooks.md):
// the account's events POSTed to a URL of the customer's, signed with a
// secret shown once, when the endpoint is created.

import { every } from './api.js';
import type { Body, Schemas } from './api.js';
import { byId, endpoint, given, group } from './command.js';
import type { Group } from './command.js';
import { PAGING, listOf, paging } from './parse.js';
import {
  showCreatedWebhook,
  showDeliveries,
  showTestQueued,
  showWebhookDeleted,
  showWebhooks,
} from './render-data.js';

type Kind = Schemas['CreateWebhook']['events'][number];

/** The kinds of the account's events a webhook can be sent (docs/api/account-events.md). */
export const EVENT_KINDS = every<Kind>()([
  'order.filled',
  'order.partially_filled',
  'order.cancelled',
  'lease.provisioning',
  'lease.active',
  'lease.failed',
  'lease.terminated',
  'lease.expired',
  'lease.sold',
  'lease.kubeconfig_refreshed',
  'transaction.posted',
]);

const WEBHOOK = ['<webhook-id>', 'the webhook (whk_…)'] as const;

const list = endpoint({
  name: 'list',
  summary: 'your webhook endpoints, newest first (without their secrets)',
  example: 'gpux webhooks list',
  call: (c) => c.GET('/v1/webhooks'),
  show: showWebhooks,
});

const create = endpoint({
  name: 'create',
  args: [
    [
      '<url>',
      'where to POST: https (http to localhost only on a development exchange); not a private address',
    ],
  ],
  summary: "POST your account's events of these kinds to a URL; its signing secret is shown once",
  example: 'gpux webhooks create https://hooks.example.com/gpux --events order.filled,lease.active',
  options: [
    {
      flags: '--events <kinds>',
      description: `the kinds to send, comma-separated: ${EVENT_KINDS.join(', ')}`,
      parse: listOf(EVENT_KINDS),
      required: true,
    },
  ],
  call: (c, a) =>
    c.POST('/v1/webhooks', {
      body: given<Body<'/v1/webhooks'>>({
        url: a.arg(0),
        events: [...new Set(a.opt<Kind[]>('events'))],
      }),
    }),
  show: showCreatedWebhook,
});

const remove = endpoint({
  name: 'delete',
  args: [WEBHOOK],
  summary: 'stop sending to a webhook endpoint; its pending deliveries fail',
  example: 'gpux webhooks delete whk_01m8…',
  call: (c, a) => c.DELETE('/v1/webhooks/{id}', byId(a.arg(0))),
  show: showWebhookDeleted,
});

const deliveries = endpoint({
  name: 'deliveries',
  args: [WEBHOOK],
  summary: "a webhook's deliveries, newest first: status, attempts, the last attempt's answer",
  example: 'gpux webhooks deliveries whk_01m8… --limit 50',
  options: PAGING,
  call: (c, a) =>
    c.GET('/v1/webhooks/{id}/deliveries', {
      params: { path: { id: a.arg(0) }, query: given(paging(a)) },
    }),
  show: showDeliveries,
});

const test = endpoint({
  name: 'test',
  args: [WEBHOOK],
  summary: 'queue a webhook.test event to the endpoint, after its pending deliveries',
  example: 'gpux webhooks test whk_01m8…',
  call: (c, a) => c.POST('/v1/webhooks/{id}/test', byId(a.arg(0))),
  show: showTestQueued,
});

export const WEBHOOKS: Group = group(
  'webhooks',
  "your account's events POSTed to your URLs, signed (docs/api/webhooks.md)",
  'gpux webhooks create https://hooks.example.com/gpux --events order.filled,lease.active',
  [list, create, remove, deliveries, test],
);
