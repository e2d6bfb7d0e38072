// POST / GET /v1/ssh_keys, DELETE /v1/ssh_keys/{id} (D32).

import type { FastifyInstance } from 'fastify';

import type { SshKeyView } from '../accounts/ssh-keys.js';
import { addSshKey, deleteSshKey, listSshKeys } from '../accounts/ssh-keys.js';
import { callerOf, requireScope } from '../auth/authenticate.js';
import type { RouteContext } from '../services.js';

const addKeyBody = {
  type: 'object',
  additionalProperties: false,
  required: ['name', 'public_key'],
  properties: {
    name: { type: 'string', minLength: 1, maxLength: 100 },
    public_key: { type: 'string', minLength: 1, maxLength: 16_384 },
  },
} as const;

function keyJson(k: SshKeyView): Record<string, unknown> {
  return {
    ssh_key_id: k.sshKeyId,
    name: k.name,
    type: k.type,
    public_key: k.publicKey,
    fingerprint: k.fingerprint,
    created_at: k.createdAt.toISOString(),
  };
}

export function sshKeyRoutes(app: FastifyInstance, { db, limiter, directory }: RouteContext): void {
  app.post<{ Body: { name: string; public_key: string } }>(
    '/v1/ssh_keys',
    { schema: { body: addKeyBody }, preValidation: requireScope(directory, limiter, 'leases') },
    async (request, reply) => {
      const { name, public_key: publicKey } = request.body;
      const key = await addSshKey(db, callerOf(request).accountId, name, publicKey);
      return reply.code(201).send(keyJson(key));
    },
  );

  app.get(
    '/v1/ssh_keys',
    { preValidation: requireScope(directory, limiter, 'read') },
    async (request) => {
      return { ssh_keys: (await listSshKeys(db, callerOf(request).accountId)).map(keyJson) };
    },
  );

  app.delete<{ Params: { id: string } }>(
    '/v1/ssh_keys/:id',
    { preValidation: requireScope(directory, limiter, 'leases') },
    async (request) => {
      await deleteSshKey(db, callerOf(request).accountId, request.params.id);
      return { ssh_key_id: request.params.id, deleted: true };
    },
  );
}
