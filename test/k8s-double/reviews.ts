// The self reviews, answered and never stored: SelfSubjectAccessReview
// (`kubectl auth can-i`, JSON or kubectl 1.32+'s protobuf), the
// SelfSubjectRulesReview (`kubectl auth can-i --list`) and SelfSubjectReview
// (`kubectl auth whoami`).

import type { Double, ResourceHandler, ResourceRequest } from './context.js';
import { decodeSelfSubjectAccessReview, decodeSelfSubjectRulesReview } from './protobuf.js';
import { errors } from './status.js';
import { isObject, send } from './wire.js';

function serveAccessReview(ctx: Double, r: ResourceRequest): void {
  if (r.method !== 'POST') throw errors.methodNotAllowed();
  const spec = (isObject(r.parsed) && isObject(r.parsed['spec']) ? r.parsed['spec'] : {}) as {
    resourceAttributes?: Record<string, string>;
    nonResourceAttributes?: { path?: string; verb?: string };
  };
  const nra = spec.nonResourceAttributes;
  const ra = spec.resourceAttributes ?? {};
  const allowed = ctx.auth.allows(
    r.user,
    nra !== undefined
      ? {
          verb: nra.verb ?? '',
          group: '',
          resource: '',
          subresource: '',
          namespace: '',
          name: '',
          path: nra.path ?? '',
        }
      : {
          verb: ra['verb'] ?? '',
          group: ra['group'] ?? '',
          resource: ra['resource'] ?? '',
          subresource: ra['subresource'] ?? '',
          namespace: ra['namespace'] ?? '',
          name: ra['name'] ?? '',
        },
  );
  send(r.res, 201, {
    kind: 'SelfSubjectAccessReview',
    apiVersion: 'authorization.k8s.io/v1',
    metadata: { creationTimestamp: null },
    spec,
    status: allowed ? { allowed: true, reason: 'RBAC: allowed' } : { allowed: false },
  });
}

function serveRulesReview(ctx: Double, r: ResourceRequest): void {
  const namespace =
    (isObject(r.parsed) && isObject(r.parsed['spec'])
      ? r.parsed['spec']['namespace']
      : undefined) ?? '';
  if (typeof namespace !== 'string' || namespace === '') {
    throw errors.invalid(
      'SelfSubjectRulesReview',
      'authorization.k8s.io',
      '',
      'spec.namespace: Required value',
    );
  }
  const resourceRules = [
    {
      verbs: ['create'],
      apiGroups: ['authorization.k8s.io'],
      resources: ['selfsubjectaccessreviews', 'selfsubjectrulesreviews'],
    },
    ...ctx.auth
      .rules(r.user, namespace)
      .filter((rule) => rule.nonResourceURLs === undefined || rule.nonResourceURLs.length === 0)
      .map((rule) => ({
        verbs: rule.verbs,
        apiGroups: rule.apiGroups ?? [],
        resources: rule.resources ?? [],
        ...(rule.resourceNames === undefined ? {} : { resourceNames: rule.resourceNames }),
      })),
  ];
  send(r.res, 201, {
    kind: 'SelfSubjectRulesReview',
    apiVersion: 'authorization.k8s.io/v1',
    metadata: { creationTimestamp: null },
    spec: { namespace },
    status: {
      resourceRules,
      nonResourceRules: [
        {
          verbs: ['get'],
          nonResourceURLs: [
            '/api',
            '/api/*',
            '/apis',
            '/apis/*',
            '/version',
            '/healthz',
            '/livez',
            '/readyz',
          ],
        },
      ],
      incomplete: false,
    },
  });
}

function serveSelfReview(_ctx: Double, r: ResourceRequest): void {
  const { user } = r;
  send(r.res, 201, {
    kind: 'SelfSubjectReview',
    apiVersion: 'authentication.k8s.io/v1',
    metadata: { creationTimestamp: null },
    status: { userInfo: { username: user.username, uid: user.uid, groups: user.groups } },
  });
}

export const accessReview: ResourceHandler = {
  decodeProtobuf: decodeSelfSubjectAccessReview,
  serve: serveAccessReview,
};
export const rulesReview: ResourceHandler = {
  decodeProtobuf: decodeSelfSubjectRulesReview,
  serve: serveRulesReview,
};
export const selfReview: ResourceHandler = { serve: serveSelfReview };
