// TokenRequest (POST …/serviceaccounts/<sa>/token): a token of the
// ServiceAccount for expirationSeconds (default 3600, under 600 is 422,
// capped at maxTokenSeconds by Auth), optionally bound to a Secret, Pod or Node by
// uid. The token itself is Auth's (auth.ts), which knows when it dies.

import type { Double, ResourceHandler, ResourceRequest } from './context.js';
import { findKind } from './resources.js';
import { ApiError, errors } from './status.js';
import { timestamp } from './store.js';
import { isObject, send } from './wire.js';

function invalid(name: string, seconds: number, why: string): ApiError {
  return errors.invalid(
    'TokenRequest',
    'authentication.k8s.io',
    name,
    `spec.expirationSeconds: Invalid value: ${seconds}: ${why}`,
  );
}

function serveTokenRequest(ctx: Double, r: ResourceRequest): void {
  const { path } = r;
  if (r.method !== 'POST') throw errors.methodNotAllowed();
  const tr = (isObject(r.parsed) ? r.parsed : {}) as {
    spec?: {
      expirationSeconds?: number;
      audiences?: string[];
      boundObjectRef?: { kind?: string; apiVersion?: string; name?: string; uid?: string };
    };
  };
  const spec = tr.spec ?? {};
  const seconds = spec.expirationSeconds ?? 3600;
  if (seconds < 600) {
    throw invalid(path.name, seconds, 'may not specify a duration less than 10 minutes');
  }
  if (seconds > 2 ** 32) {
    throw invalid(path.name, seconds, 'may not specify a duration larger than 2^32 seconds');
  }
  let bound: { kind: string; name: string; uid: string } | undefined;
  const ref = spec.boundObjectRef;
  if (ref !== undefined) {
    const bd = ref.kind === undefined ? undefined : findKind(ref.apiVersion ?? 'v1', ref.kind);
    if (bd === undefined || !['Secret', 'Pod', 'Node'].includes(bd.kind)) {
      throw errors.badRequest(`cannot bind token for object of kind ${String(ref.kind)}`);
    }
    const o = ctx.store.get(bd, path.namespace, ref.name ?? '');
    if (o === undefined) throw errors.notFound(bd.group, bd.plural, ref.name ?? '');
    if (ref.uid !== undefined && ref.uid !== '' && ref.uid !== o.metadata.uid) {
      throw new ApiError(
        409,
        'Conflict',
        `the UID in the bound object reference (${ref.uid}) does not match the UID in record. The object might have been deleted and then recreated`,
      );
    }
    bound = { kind: bd.kind, name: ref.name ?? '', uid: o.metadata.uid ?? '' };
  }
  const minted = ctx.auth.mint(path.namespace, path.name, seconds, bound);
  send(r.res, 201, {
    kind: 'TokenRequest',
    apiVersion: 'authentication.k8s.io/v1',
    metadata: {
      name: path.name,
      namespace: path.namespace,
      creationTimestamp: timestamp(ctx.now()),
    },
    spec: {
      audiences: spec.audiences ?? ['https://kubernetes.default.svc'],
      expirationSeconds: minted.seconds,
      ...(ref === undefined ? {} : { boundObjectRef: { ...ref, uid: bound?.uid } }),
    },
    status: { token: minted.token, expirationTimestamp: timestamp(minted.expiresAt) },
  });
}

export const tokenRequest: ResourceHandler = { serve: serveTokenRequest };
