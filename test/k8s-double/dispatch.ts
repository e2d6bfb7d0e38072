// Which code serves which resource: one table from a resource (or
// resource/subresource), named as kubectl and RBAC messages name them
// (`pods/exec`, `deployments.apps/scale`), to its handler. A resource that is
// not in it is generic CRUD (crud.ts); a subresource not in it is generic
// CRUD on its resource (status).

import type { Double, ResourceHandler, ResourceRequest } from './context.js';
import { serveCrud } from './crud.js';
import { namespaces } from './namespaces.js';
import { podLog, pods, upgradeRequired } from './pods.js';
import type { ResourceDef } from './resources.js';
import { accessReview, rulesReview, selfReview } from './reviews.js';
import { scale } from './scale.js';
import { qualified } from './status.js';
import { tokenRequest } from './token-request.js';

const HANDLERS: Readonly<Record<string, ResourceHandler>> = {
  namespaces,
  pods,
  'pods/exec': upgradeRequired,
  'pods/attach': upgradeRequired,
  'pods/portforward': upgradeRequired,
  'pods/log': podLog,
  'serviceaccounts/token': tokenRequest,
  'deployments.apps/scale': scale,
  'statefulsets.apps/scale': scale,
  'replicasets.apps/scale': scale,
  'selfsubjectaccessreviews.authorization.k8s.io': accessReview,
  'selfsubjectrulesreviews.authorization.k8s.io': rulesReview,
  'selfsubjectreviews.authentication.k8s.io': selfReview,
};

const PLAIN: ResourceHandler = {};

/** The handler of `d`'s subresource `sub` ('' for the resource itself). */
export function handlerFor(d: ResourceDef, sub: string): ResourceHandler {
  const name = qualified(d.group, d.plural) + (sub === '' ? '' : `/${sub}`);
  return HANDLERS[name] ?? PLAIN;
}

/** How kind `d` behaves where generic CRUD asks (deletion): its resource's entry. */
export function kindOf(d: ResourceDef): ResourceHandler {
  return handlerFor(d, '');
}

export function serveResource(ctx: Double, r: ResourceRequest): void | Promise<void> {
  return (handlerFor(r.def, r.path.subresource).serve ?? serveCrud)(ctx, r);
}
