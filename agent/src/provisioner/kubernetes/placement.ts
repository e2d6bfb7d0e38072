// Placement of a lease's pods (D30, issue 13): the mutating admission
// webhook's decision as a pure function of an AdmissionReview v1 and the
// lease the pod's namespace belongs to. Every pod created in a lease's
// namespace gets the lease's node selector, node affinity and tolerations,
// overwriting whatever the customer set, so a customer's pods land only on
// their own nodes (and, with the lease's taint, nobody else's land there).
// A `kubernetes.io/hostname` the customer pinned is kept: ANDed with the
// lease's label it can only choose among the lease's own nodes (the
// workspace pods are pinned this way).

import type { V1Affinity, V1Toleration } from '@kubernetes/client-node';

import { LEASE_LABEL, leaseTolerations } from './objects.js';

export const HOSTNAME_LABEL = 'kubernetes.io/hostname';

export interface JsonPatchOp {
  readonly op: 'add' | 'replace' | 'remove';
  readonly path: string;
  readonly value?: unknown;
}

/** The parts of an AdmissionReview v1 request the webhook reads. */
export interface AdmissionRequest {
  readonly uid: string;
  readonly kind?: { readonly group?: string; readonly version?: string; readonly kind?: string };
  readonly resource?: {
    readonly group?: string;
    readonly version?: string;
    readonly resource?: string;
  };
  readonly subResource?: string;
  readonly namespace?: string;
  readonly operation?: string;
  readonly object?: unknown;
}

export interface AdmissionReview {
  readonly apiVersion: string;
  readonly kind: string;
  readonly request?: AdmissionRequest;
}

export interface AdmissionResponseReview {
  readonly apiVersion: 'admission.k8s.io/v1';
  readonly kind: 'AdmissionReview';
  readonly response: {
    readonly uid: string;
    readonly allowed: boolean;
    readonly patchType?: 'JSONPatch';
    /** base64 of the JSON Patch. */
    readonly patch?: string;
    readonly status?: { readonly code: number; readonly message: string };
  };
}

export function leaseAffinity(leaseId: string): V1Affinity {
  return {
    nodeAffinity: {
      requiredDuringSchedulingIgnoredDuringExecution: {
        nodeSelectorTerms: [
          { matchExpressions: [{ key: LEASE_LABEL, operator: 'In', values: [leaseId] }] },
        ],
      },
    },
  };
}

/**
 * The JSON Patch for a pod of lease `leaseId`: nodeSelector, affinity and
 * tolerations replaced by the lease's. `add` on a member that exists
 * replaces it (RFC 6902 §4.1), so the patch is the same whatever the pod had.
 */
export function placementPatch(pod: unknown, leaseId: string): JsonPatchOp[] {
  const spec = (pod as { spec?: { nodeSelector?: unknown } } | null)?.spec;
  const selector: Record<string, string> = { [LEASE_LABEL]: leaseId };
  const given = spec?.nodeSelector;
  if (given !== null && typeof given === 'object') {
    const host = (given as Record<string, unknown>)[HOSTNAME_LABEL];
    if (typeof host === 'string') selector[HOSTNAME_LABEL] = host;
  }
  const tolerations: V1Toleration[] = leaseTolerations(leaseId);
  const ops: JsonPatchOp[] = [];
  if (spec === undefined || spec === null) ops.push({ op: 'add', path: '/spec', value: {} });
  ops.push(
    { op: 'add', path: '/spec/nodeSelector', value: selector },
    { op: 'add', path: '/spec/affinity', value: leaseAffinity(leaseId) },
    { op: 'add', path: '/spec/tolerations', value: tolerations },
  );
  return ops;
}

function isPodCreate(req: AdmissionRequest): boolean {
  const resource = req.resource?.resource ?? '';
  const group = req.resource?.group ?? '';
  return (
    group === '' &&
    resource === 'pods' &&
    (req.subResource ?? '') === '' &&
    (req.operation ?? '') === 'CREATE'
  );
}

/**
 * The webhook's answer. `leaseId`: the lease the request's namespace is
 * labelled with (undefined: not a lease's namespace, nothing to do);
 * `lookupFailed`: the namespace could not be read, and a pod is never let
 * through unplaced.
 */
export function admissionResponse(
  review: AdmissionReview,
  leaseId: string | undefined,
  lookupFailed = false,
): AdmissionResponseReview {
  const uid = review.request?.uid ?? '';
  const base = { apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview' } as const;
  const req = review.request;
  if (req === undefined || !isPodCreate(req)) {
    return { ...base, response: { uid, allowed: true } };
  }
  if (lookupFailed) {
    return {
      ...base,
      response: {
        uid,
        allowed: false,
        status: {
          code: 503,
          message: `gpux: the lease of namespace ${req.namespace ?? ''} could not be read; try again`,
        },
      },
    };
  }
  if (leaseId === undefined) return { ...base, response: { uid, allowed: true } };
  const patch = placementPatch(req.object, leaseId);
  return {
    ...base,
    response: {
      uid,
      allowed: true,
      patchType: 'JSONPatch',
      patch: Buffer.from(JSON.stringify(patch)).toString('base64'),
    },
  };
}

/** Reads an AdmissionReview v1 body; undefined when it is not one. */
export function parseAdmissionReview(body: unknown): AdmissionReview | undefined {
  if (body === null || typeof body !== 'object') return undefined;
  const r = body as Partial<AdmissionReview>;
  if (r.apiVersion !== 'admission.k8s.io/v1' || r.kind !== 'AdmissionReview') return undefined;
  if (r.request === undefined || typeof r.request.uid !== 'string') return undefined;
  return r as AdmissionReview;
}
