// The console's page and assets (issue 23, docs/console.md), served by the
// exchange at /console with @fastify/static from exchange/dist/console-app,
// where `npm run build` and `npm start` put the Vite build of
// exchange/console (console/build-app.ts). Public files: everything they
// show comes from the API, after signing in. Without a build the page says
// how to make one.

import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

import fastifyStatic from '@fastify/static';
import type { FastifyInstance, FastifyReply } from 'fastify';

/** exchange/dist/console-app, from src/console and dist/console alike. */
export const CONSOLE_APP_DIR = fileURLToPath(new URL('../../dist/console-app/', import.meta.url));

/** Security headers of every console file: no framing, no foreign scripts. */
const HEADERS = {
  'content-security-policy':
    "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
};

/** Hashed assets are cached for good; the page itself is read again each time. */
async function sendFile(dir: string, file: string, reply: FastifyReply): Promise<FastifyReply> {
  void reply.headers(HEADERS);
  if (!existsSync(`${dir}/index.html`)) {
    return reply
      .code(503)
      .type('text/plain; charset=utf-8')
      .send('The console is not built: run `npm run build` (or `npm start`).\n');
  }
  const page = file === 'index.html';
  return reply.sendFile(file, { maxAge: page ? 0 : 31_536_000_000, immutable: !page });
}

export function consoleFiles(app: FastifyInstance, dir: string = CONSOLE_APP_DIR): void {
  void app.register(fastifyStatic, { root: dir, serve: false });
  // Public, and not in the OpenAPI document: files, not the API.
  const options = {
    exposeHeadRoute: false,
    config: { access: 'public' as const },
    schema: { hide: true },
  };
  app.get('/console', options, (_request, reply) => reply.redirect('/console/', 302));
  app.get('/console/', options, (_request, reply) => sendFile(dir, 'index.html', reply));
  app.get<{ Params: { '*': string } }>('/console/*', options, (request, reply) => {
    const path = request.params['*'];
    // Built assets are files; any other path is a page of the app.
    return sendFile(dir, /^assets\/[\w.-]+$/.test(path) ? path : 'index.html', reply);
  });
}
