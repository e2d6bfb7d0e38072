// The console's sign-in (issue 23, docs/console.md):
//   POST   /v1/console/session  an operator token in the body → a session cookie
//   GET    /v1/console/session  who is signed in, and the session's CSRF token
//   DELETE /v1/console/session  sign out
// The cookie then authenticates the admin API (http/guard.ts). A token is
// never taken from a URL: only from this body or an Authorization header.

import { GpuxError } from '@gpux/shared';
import type { FastifyPluginCallbackTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import { Type } from '@sinclair/typebox';
import type { Static } from '@sinclair/typebox';

import {
  DEFAULT_SESSION_HOURS,
  closeSession,
  csrfMatches,
  csrfTokenOf,
  openSession,
  sessionCookie,
  sessionIdOf,
  sessionOperator,
} from '../console/sessions.js';
import type { ConsoleSession } from '../console/sessions.js';
import { Nullable, Timestamp } from '../http/schema.js';
import type { RouteContext } from '../services.js';

const SignInBody = Type.Object(
  {
    token: Type.String({
      minLength: 1,
      maxLength: 512,
      description: 'The admin token, or an account token with the `admin` scope.',
    }),
  },
  { title: 'ConsoleSignIn', additionalProperties: false },
);

const SessionSchema = Type.Object(
  {
    actor: Type.String({
      description: 'Who is signed in, as the audit log names them: admin_token or an account id.',
    }),
    token_id: Nullable(
      Type.String({ description: 'The operator’s token; null: the admin token.' }),
    ),
    expires_at: Timestamp('When the session ends by itself.'),
    csrf_token: Type.String({
      description: 'Send it in X-CSRF-Token with every change made through the session cookie.',
    }),
  },
  { title: 'ConsoleSession' },
);

const SignedOutSchema = Type.Object({ signed_out: Type.Boolean() }, { title: 'ConsoleSignedOut' });

const view = (s: ConsoleSession): Static<typeof SessionSchema> => ({
  actor: s.actor,
  token_id: s.tokenId,
  expires_at: s.expiresAt.toISOString(),
  csrf_token: csrfTokenOf(s.sessionId),
});

export const consoleSessionRoutes: FastifyPluginCallbackTypebox<{ ctx: RouteContext }> = (
  app,
  { ctx },
  done,
) => {
  /** The live session of the request's cookie, or 401. */
  async function current(request: FastifyRequest): Promise<ConsoleSession> {
    const id = sessionIdOf(request.headers.cookie);
    const session =
      id === undefined ? undefined : await sessionOperator(ctx.db, ctx.adminToken, id);
    if (session === undefined) throw new GpuxError('unauthorized', 'not signed in to the console');
    return session;
  }

  app.post(
    '/v1/console/session',
    {
      // Counted per address: guesses of a token are slowed like any public call.
      config: {
        access: 'public',
        rate: 'address',
        errors: ['unauthorized', 'forbidden', 'account_suspended'],
      },
      schema: {
        summary: 'Sign in to the console: an operator token for a session cookie',
        description:
          'Sets the `gpux_console` cookie (HttpOnly, SameSite=Strict, Secure over HTTPS) for GPUX_CONSOLE_SESSION_HOURS. The cookie authenticates the admin API; changes need X-CSRF-Token too.',
        tags: ['console'],
        body: SignInBody,
        response: { 201: SessionSchema },
      },
    },
    async (request, reply) => {
      const hours = ctx.consoleSessionHours ?? DEFAULT_SESSION_HOURS;
      const session = await openSession(ctx.db, ctx.adminToken, request.body.token, hours);
      request.log.info({ operator: session.actor }, 'console session opened');
      void reply
        .code(201)
        .header('cache-control', 'no-store')
        .header(
          'set-cookie',
          sessionCookie(session.sessionId, hours * 3600, request.protocol === 'https'),
        );
      return view(session);
    },
  );

  app.get(
    '/v1/console/session',
    {
      config: { access: 'public', errors: ['unauthorized'] },
      schema: {
        summary: 'The console session of the cookie: who is signed in, and its CSRF token',
        tags: ['console'],
        response: { 200: SessionSchema },
      },
    },
    async (request, reply) => {
      void reply.header('cache-control', 'no-store');
      return view(await current(request));
    },
  );

  app.delete(
    '/v1/console/session',
    {
      config: { access: 'public', errors: ['unauthorized', 'csrf_token_invalid'] },
      schema: {
        summary: 'Sign out of the console: the session ends and its cookie is cleared',
        tags: ['console'],
        response: { 200: SignedOutSchema },
      },
    },
    async (request, reply) => {
      const session = await current(request);
      if (!csrfMatches(session.sessionId, request.headers['x-csrf-token'])) {
        throw new GpuxError('csrf_token_invalid', 'send the session’s CSRF token in X-CSRF-Token');
      }
      await closeSession(ctx.db, session.sessionId);
      void reply.header('set-cookie', sessionCookie('', 0, request.protocol === 'https'));
      return { signed_out: true };
    },
  );

  done();
};
