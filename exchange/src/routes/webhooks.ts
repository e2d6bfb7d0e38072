// POST / GET /v1/webhooks, DELETE /v1/webhooks/{id},
// GET /v1/webhooks/{id}/deliveries, POST /v1/webhooks/{id}/test (issue 22,
// docs/api/webhooks.md). Reading needs the `read` scope; registering,
// deleting and test-sending need `trade`: a webhook sends the account's
// events (its fills, leases and money) to a URL, which a read-only token
// may not decide.

import type { FastifyPluginCallbackTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';

import { ACCOUNT_EVENT_KINDS } from '../account-events/events.js';
import { callerOf } from '../auth/authenticate.js';
import { PAGE_QUERY, StringEnum } from '../http/schema.js';
import type { RouteContext } from '../services.js';
import {
  MAX_ENDPOINTS,
  checkUrl,
  createEndpoint,
  deleteEndpoint,
  deliveriesOf,
  endpointOf,
  listEndpoints,
  queueTest,
} from '../webhooks/endpoints.js';
import {
  CreatedWebhookSchema,
  DeliveryListSchema,
  TestQueuedSchema,
  WebhookDeletedSchema,
  WebhookListSchema,
  deliveryView,
  webhookView,
} from '../views/webhooks.js';

const CreateBody = Type.Object(
  {
    url: Type.String({
      minLength: 1,
      maxLength: 2048,
      description:
        'https (http to localhost in development); its host may not resolve to a private, loopback or link-local address.',
    }),
    events: Type.Array(StringEnum(ACCOUNT_EVENT_KINDS), {
      minItems: 1,
      uniqueItems: true,
      description: 'The kinds of the account’s events to deliver.',
    }),
  },
  { title: 'CreateWebhook', additionalProperties: false },
);

/** Any id: an unknown one is 404 like another account's (D24). */
const WebhookParams = Type.Object({ id: Type.String() });

const DeliveriesQuery = Type.Object(PAGE_QUERY, { additionalProperties: false });

export const webhookRoutes: FastifyPluginCallbackTypebox<{ ctx: RouteContext }> = (
  app,
  { ctx },
  done,
) => {
  app.post(
    '/v1/webhooks',
    {
      config: { access: 'customer', scope: 'trade', rate: 'create' },
      schema: {
        summary: 'Register a webhook endpoint',
        description: `The account's events of the kinds named are POSTed to the URL from now on, signed with the secret in the answer (shown once). At most ${MAX_ENDPOINTS} per account. docs/api/webhooks.md.`,
        tags: ['webhooks'],
        body: CreateBody,
        response: { 201: CreatedWebhookSchema },
      },
    },
    async (request, reply) => {
      const { url, events } = request.body;
      await checkUrl(url, ctx.webhooksToLocalhost);
      const { row, secret } = await createEndpoint(
        ctx.db,
        ctx.secrets,
        callerOf(request).accountId,
        url,
        events,
        Date.now(),
      );
      return reply.code(201).send({ ...webhookView(row), secret });
    },
  );

  app.get(
    '/v1/webhooks',
    {
      config: { access: 'customer', scope: 'read', rate: 'query' },
      schema: {
        summary: 'The account’s webhook endpoints',
        tags: ['webhooks'],
        response: { 200: WebhookListSchema },
      },
    },
    async (request) => ({
      webhooks: (await listEndpoints(ctx.db, callerOf(request).accountId)).map(webhookView),
    }),
  );

  app.delete(
    '/v1/webhooks/:id',
    {
      config: { access: 'customer', scope: 'trade', rate: 'cancel', errors: ['not_found'] },
      schema: {
        summary: 'Delete a webhook endpoint',
        description: 'Nothing more is sent to it; its pending deliveries are failed.',
        tags: ['webhooks'],
        params: WebhookParams,
        response: { 200: WebhookDeletedSchema },
      },
    },
    async (request) => {
      await deleteEndpoint(ctx.db, callerOf(request).accountId, request.params.id, Date.now());
      return { webhook_id: request.params.id, deleted: true as const };
    },
  );

  app.get(
    '/v1/webhooks/:id/deliveries',
    {
      config: { access: 'customer', scope: 'read', rate: 'query', errors: ['not_found'] },
      schema: {
        summary: 'A webhook’s deliveries and their attempts',
        tags: ['webhooks'],
        params: WebhookParams,
        querystring: DeliveriesQuery,
        response: { 200: DeliveryListSchema },
      },
    },
    async (request) => {
      const endpoint = await endpointOf(ctx.db, callerOf(request).accountId, request.params.id);
      const { limit, offset } = request.query;
      const { rows, total } = await deliveriesOf(ctx.db, endpoint.id, limit, offset);
      return { deliveries: rows.map(deliveryView), total, limit, offset };
    },
  );

  app.post(
    '/v1/webhooks/:id/test',
    {
      config: { access: 'customer', scope: 'trade', rate: 'create', errors: ['not_found'] },
      schema: {
        summary: 'Send a webhook.test event to the endpoint',
        description:
          'Queued after the endpoint’s pending deliveries; its attempts are in GET /v1/webhooks/{id}/deliveries.',
        tags: ['webhooks'],
        params: WebhookParams,
        response: { 202: TestQueuedSchema },
      },
    },
    async (request, reply) => {
      const endpoint = await endpointOf(ctx.db, callerOf(request).accountId, request.params.id);
      const id = await queueTest(ctx.db, endpoint, Date.now());
      return reply.code(202).send({ delivery_id: id });
    },
  );

  done();
};
