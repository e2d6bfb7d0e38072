// Deleting a namespace deletes everything in it. With namespaceTerminationMs
// it is Terminating first: its content goes at once, new content is refused
// (admission.ts's requireNamespace), and the namespace itself goes later.
// A DELETE answers the namespace, Terminating.

import type { Double, ResourceHandler } from './context.js';
import type { ResourceDef } from './resources.js';
import { timestamp } from './store.js';
import type { KObject } from './store.js';

function removeContent(ctx: Double, namespace: string): void {
  for (const { def: od, object } of ctx.store.inNamespace(namespace)) {
    ctx.store.remove(od, namespace, object.metadata.name ?? '');
  }
}

function terminate(ctx: Double, d: ResourceDef, name: string, ms: number): KObject | undefined {
  const ns = ctx.store.get(d, '', name);
  if (ns === undefined) return undefined;
  removeContent(ctx, name);
  if (ns.metadata.deletionTimestamp !== undefined) return ns;
  const timer = setTimeout(() => {
    ctx.timers.delete(timer);
    ctx.store.remove(d, '', name);
  }, ms);
  ctx.timers.add(timer);
  return ctx.store.update(d, {
    ...ns,
    metadata: { ...ns.metadata, deletionTimestamp: timestamp(ctx.now()) },
    status: { phase: 'Terminating' },
  });
}

export const namespaces: ResourceHandler = {
  remove(ctx, d, namespace, name) {
    const terminationMs = ctx.opts.namespaceTerminationMs ?? 0;
    if (terminationMs > 0) return terminate(ctx, d, name, terminationMs);
    const gone = ctx.store.remove(d, namespace, name);
    if (gone !== undefined) removeContent(ctx, name);
    return gone;
  },
  deleted(ctx, gone) {
    gone.metadata.deletionTimestamp ??= timestamp(ctx.now());
    gone['status'] = { phase: 'Terminating' };
    return gone;
  },
};
