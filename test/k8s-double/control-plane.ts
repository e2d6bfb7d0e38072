// The control plane's passes (controllers.ts): after any change to what
// controllers or the scheduler look at, one pass at a time, again while
// changes keep coming. Controllers create pods through admission, as the
// controller manager does (webhooks and quota apply to them).

import type { Double } from './context.js';
import { runControllers } from './controllers.js';
import { create, remove } from './crud.js';
import { MASTERS } from './rbac.js';
import type { UserInfo } from './rbac.js';
import { resource } from './resources.js';
import type { Change, KObject } from './store.js';

const CONTROLLED = new Set([
  'Pod',
  'Node',
  'Deployment',
  'ReplicaSet',
  'StatefulSet',
  'ResourceQuota',
  'Namespace',
  'MutatingWebhookConfiguration',
]);

const CONTROLLER_MANAGER: UserInfo = {
  username: 'system:kube-controller-manager',
  groups: [MASTERS],
};

/** Runs the passes on the store's changes from now on. */
export function startControlPlane(ctx: Double): void {
  // What a pass throws is kept here (for a debugger); the next change runs a pass again.
  const failures: unknown[] = [];
  const controlPlane = {
    store: ctx.store,
    scheduler: ctx.opts.scheduler ?? true,
    controllers: ctx.opts.controllers ?? true,
  };
  const createPod = (pod: KObject): Promise<KObject> =>
    create(ctx, CONTROLLER_MANAGER, resource('', 'pods'), pod.metadata.namespace ?? '', pod, false);
  let queued = false;
  let busy = false;
  const afterWrite = (): void => {
    queued = true;
    if (busy) return;
    busy = true;
    setImmediate(() => {
      void (async () => {
        while (queued) {
          queued = false;
          try {
            await runControllers(controlPlane, createPod, (d, ns, name) =>
              remove(ctx, d, ns, name, 'Background'),
            );
          } catch (err) {
            failures.push(err);
          }
        }
        busy = false;
      })();
    });
  };
  ctx.store.changes.on('change', (c: Change) => {
    if (CONTROLLED.has(c.def.kind)) afterWrite();
  });
}
