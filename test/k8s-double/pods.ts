// Pods beyond CRUD: a DELETE answers the pod; logs (empty); exec, attach and
// portforward, which need a WebSocket upgrade (exec.ts, portforward.ts) into
// a Running pod and a valid container; and a deleted pod's sessions die with
// its containers.

import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';

import type { Double, ResourceHandler } from './context.js';
import { handleExecUpgrade } from './exec.js';
import { forwardPorts, handlePortForwardUpgrade } from './portforward.js';
import { resource } from './resources.js';
import type { ResourcePath } from './route.js';
import { errors } from './status.js';
import { timestamp } from './store.js';
import type { Change } from './store.js';

/** A deleted pod is answered as the object, marked deleted. */
export const pods: ResourceHandler = {
  deleted(ctx, gone) {
    gone.metadata.deletionTimestamp ??= timestamp(ctx.now());
    return gone;
  },
};

/** pods/exec, attach and portforward over plain HTTP: they need an upgrade. */
export const upgradeRequired: ResourceHandler = {
  serve() {
    throw errors.badRequest('Upgrade request required');
  },
};

/** pods/log: the pod's log (always empty: nothing runs in a pod here). */
export const podLog: ResourceHandler = {
  serve(ctx, r) {
    if (ctx.store.get(r.def, r.path.namespace, r.path.name) === undefined)
      throw errors.notFound('', 'pods', r.path.name);
    r.res.writeHead(200, { 'content-type': 'text/plain' });
    r.res.end('');
  },
};

/** The subresources a WebSocket upgrade serves. */
export const UPGRADES: readonly string[] = ['exec', 'portforward'];

/**
 * A pods/exec or pods/portforward upgrade, already authorized: into a Running
 * pod (and for exec one of its containers), or an ApiError thrown before the
 * upgrade.
 */
export function upgradePod(
  ctx: Double,
  req: IncomingMessage,
  socket: Duplex,
  head: Buffer,
  path: ResourcePath,
  query: URLSearchParams,
): void {
  const pod = ctx.store.get(resource('', 'pods'), path.namespace, path.name);
  if (pod === undefined) throw errors.notFound('', 'pods', path.name);
  const phase = (pod['status'] as { phase?: string } | undefined)?.phase;
  if (phase !== 'Running') {
    throw errors.badRequest(`pod ${path.name} is not running (phase ${String(phase)})`);
  }
  if (path.subresource === 'portforward') {
    const ports = forwardPorts(query);
    if (ports === undefined) throw errors.badRequest('ports must be 1 … 65535');
    handlePortForwardUpgrade(req, socket, head, {
      podUid: pod.metadata.uid ?? '',
      ports,
      sessions: ctx.sessions,
    });
    return;
  }
  const containers = (
    (pod['spec'] as { containers?: { name: string }[] } | undefined)?.containers ?? []
  ).map((c) => c.name);
  const container = query.get('container') ?? containers[0] ?? '';
  if (!containers.includes(container)) {
    throw errors.badRequest(`container ${container} is not valid for pod ${path.name}`);
  }
  handleExecUpgrade(req, socket, head, {
    pod,
    container,
    command: query.getAll('command'),
    tty: query.get('tty') === 'true',
    stdin: query.get('stdin') === 'true',
    ...(ctx.opts.execRunner === undefined ? {} : { runner: ctx.opts.execRunner }),
    protocols: ctx.execProtocols,
    sessions: ctx.sessions,
  });
}

/** A deleted pod's containers die, and with them the exec and port-forward sessions into it. */
export function endSessionsWithPods(ctx: Double): void {
  ctx.store.changes.on('change', (c: Change) => {
    if (c.type !== 'DELETED' || c.def.kind !== 'Pod') return;
    for (const s of ctx.sessions.values()) if (s.podUid === c.object.metadata.uid) s.kill();
  });
}
