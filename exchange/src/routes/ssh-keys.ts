// POST / GET /v1/ssh_keys, DELETE /v1/ssh_keys/{id} (D32).

import type { FastifyPluginCallbackTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';

import { addSshKey, deleteSshKey, listSshKeys } from '../accounts/ssh-keys.js';
import { callerOf } from '../auth/authenticate.js';
import type { RouteContext } from '../services.js';
import {
  SshKeyDeletedSchema,
  SshKeyListSchema,
  SshKeySchema,
  sshKeyView,
} from '../views/accounts.js';

const AddKeyBody = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 100 }),
    public_key: Type.String({ minLength: 1, maxLength: 16_384 }),
  },
  { title: 'AddSshKey', additionalProperties: false },
);

/** Any id: an unknown one is 404 like another account's (D24). */
const KeyParams = Type.Object({ id: Type.String() });

export const sshKeyRoutes: FastifyPluginCallbackTypebox<{ ctx: RouteContext }> = (
  app,
  { ctx },
  done,
) => {
  app.post(
    '/v1/ssh_keys',
    {
      config: { access: 'customer', scope: 'leases', rate: 'query', errors: ['ssh_key_exists'] },
      schema: {
        summary: 'Register an SSH public key',
        tags: ['account'],
        body: AddKeyBody,
        response: { 201: SshKeySchema },
      },
    },
    async (request, reply) => {
      const { name, public_key: publicKey } = request.body;
      const key = await addSshKey(ctx.db, callerOf(request).accountId, name, publicKey);
      return reply.code(201).send(sshKeyView(key));
    },
  );

  app.get(
    '/v1/ssh_keys',
    {
      config: { access: 'customer', scope: 'read', rate: 'query' },
      schema: {
        summary: 'The caller’s SSH keys',
        tags: ['account'],
        response: { 200: SshKeyListSchema },
      },
    },
    async (request) => ({
      ssh_keys: (await listSshKeys(ctx.db, callerOf(request).accountId)).map(sshKeyView),
    }),
  );

  app.delete(
    '/v1/ssh_keys/:id',
    {
      config: { access: 'customer', scope: 'leases', rate: 'query', errors: ['not_found'] },
      schema: {
        summary: 'Delete an SSH key',
        tags: ['account'],
        params: KeyParams,
        response: { 200: SshKeyDeletedSchema },
      },
    },
    async (request) => {
      await deleteSshKey(ctx.db, callerOf(request).accountId, request.params.id);
      return { ssh_key_id: request.params.id, deleted: true as const };
    },
  );

  done();
};
