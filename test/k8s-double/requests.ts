// One request through the double. HTTP requests and WebSocket upgrades
// (pods/exec, pods/portforward) pass the same gate: Auth (auth.ts)
// authenticates them and authorizes their RBAC attributes, and both are
// recorded the same way. Then non-resource paths (discovery, /version,
// health) are answered here and resources by dispatch.ts's table.

import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';

import type { Double } from './context.js';
import { handlerFor, serveResource } from './dispatch.js';
import { UPGRADES, upgradePod } from './pods.js';
import type { Attributes, UserInfo } from './rbac.js';
import { findResource } from './resources.js';
import { route, verbOf } from './route.js';
import type { Route } from './route.js';
import { ApiError, errors } from './status.js';
import type { Recording } from './types.js';
import { parseJson, readBody, refuseUpgrade, send } from './wire.js';

/** The request's user (recorded), or 401; 403 when it impersonates someone it may not. */
function authenticate(ctx: Double, req: IncomingMessage, rec: Recording): UserInfo {
  const user = ctx.auth.authenticate(req);
  rec.user = user?.username ?? '';
  if (user === undefined) throw errors.unauthorized();
  return user;
}

/** Records the request's RBAC attributes and refuses it with 403 unless the user may. */
function authorize(ctx: Double, user: UserInfo, attrs: Attributes, rec: Recording): void {
  Object.assign(rec, attrs);
  ctx.auth.authorize(user, attrs);
}

function asApiError(err: unknown): ApiError {
  return err instanceof ApiError
    ? err
    : new ApiError(500, 'InternalError', `Internal error occurred: ${String(err)}`);
}

/** Serves an HTTP request; its failure is answered as a Status. */
export function serveHttp(
  ctx: Double,
  req: IncomingMessage,
  res: ServerResponse,
  rec: Recording,
): void {
  res.on('finish', () => {
    rec.status = res.statusCode;
  });
  handle(ctx, req, res, rec).catch((err: unknown) => {
    const e = asApiError(err);
    rec.status = e.code;
    if (!res.headersSent) send(res, e.code, e.toStatus());
    else res.end();
  });
}

async function handle(
  ctx: Double,
  req: IncomingMessage,
  res: ServerResponse,
  rec: Recording,
): Promise<void> {
  const url = new URL(req.url ?? '/', 'https://double');
  const query = url.searchParams;
  const method = req.method ?? 'GET';
  const user = authenticate(ctx, req, rec);
  const r = route(url.pathname);
  if (r.kind !== 'resource') return serveNonResource(ctx, res, user, method, url.pathname, r);

  const path = r.path;
  const d = findResource(path.group, path.version, path.plural);
  if (d === undefined) throw errors.pathNotFound();
  if (path.subresource !== '' && d.subresources?.[path.subresource] === undefined) {
    throw errors.pathNotFound();
  }
  const verb = verbOf(method, path, query);
  authorize(
    ctx,
    user,
    {
      verb,
      group: path.group,
      resource: path.plural,
      subresource: path.subresource,
      namespace: path.namespace,
      name: path.name,
    },
    rec,
  );
  const handler = handlerFor(d, path.subresource);
  const contentType = (req.headers['content-type'] ?? '').toLowerCase();
  const body = method === 'GET' || method === 'HEAD' ? Buffer.alloc(0) : await readBody(req);
  if (contentType !== '') rec.contentType = contentType;
  let parsed: unknown;
  if (body.length > 0) {
    if (contentType.startsWith('application/vnd.kubernetes.protobuf')) {
      if (handler.decodeProtobuf === undefined) throw errors.unsupportedMediaType(contentType);
      try {
        parsed = handler.decodeProtobuf(body);
      } catch (err) {
        throw errors.badRequest(String(err));
      }
    } else parsed = parseJson(body);
    rec.body = parsed;
  }
  await serveResource(ctx, {
    req,
    res,
    user,
    def: d,
    path,
    method,
    verb,
    query,
    contentType,
    body,
    parsed,
    dryRun: query.get('dryRun') === 'All',
  });
}

function serveNonResource(
  ctx: Double,
  res: ServerResponse,
  user: UserInfo,
  method: string,
  pathname: string,
  r: Exclude<Route, { kind: 'resource' }>,
): void {
  ctx.auth.authorizePath(user, method, pathname);
  if (r.kind === 'doc') {
    if (r.body === undefined) throw errors.pathNotFound();
    return send(res, 200, r.body);
  }
  if (pathname === '/version') {
    const minor = ctx.opts.minorVersion ?? 33;
    return send(res, 200, {
      major: '1',
      minor: String(minor),
      gitVersion: `v1.${minor}.0`,
      gitCommit: '0000000000000000000000000000000000000000',
      gitTreeState: 'clean',
      buildDate: '2025-01-01T00:00:00Z',
      goVersion: 'go1.23.0',
      compiler: 'gc',
      platform: 'linux/amd64',
    });
  }
  if (['/healthz', '/livez', '/readyz'].includes(pathname)) {
    res.writeHead(200, { 'content-type': 'text/plain' });
    res.end('ok');
    return;
  }
  throw errors.pathNotFound();
}

/** Serves a WebSocket upgrade (101), or refuses it with a Status over plain HTTP. */
export function serveUpgrade(
  ctx: Double,
  req: IncomingMessage,
  socket: Duplex,
  head: Buffer,
  rec: Recording,
): void {
  const url = new URL(req.url ?? '/', 'https://double');
  try {
    const user = authenticate(ctx, req, rec);
    const r = route(url.pathname);
    if (
      r.kind !== 'resource' ||
      r.path.plural !== 'pods' ||
      !UPGRADES.includes(r.path.subresource)
    ) {
      throw errors.badRequest('only pods/exec and pods/portforward upgrades are served');
    }
    // Kubernetes 1.31+ (AuthorizePodWebsocketUpgradeCreatePermission) asks for `create`
    // on pods/exec and pods/portforward for a WebSocket, as for the POST of SPDY.
    const attrs: Attributes = {
      verb: 'create',
      group: '',
      resource: 'pods',
      subresource: r.path.subresource,
      namespace: r.path.namespace,
      name: r.path.name,
    };
    authorize(ctx, user, attrs, rec);
    upgradePod(ctx, req, socket, head, r.path, url.searchParams);
    rec.status = 101;
  } catch (err) {
    const e = asApiError(err);
    rec.status = e.code;
    refuseUpgrade(socket, e);
  }
}
