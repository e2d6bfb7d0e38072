import { describe, expect, it } from 'vitest';

import { admissionResponse, parseAdmissionReview, placementPatch } from './placement.js';

const ID = 'lse_01jdq3m5x0aaaaaaaaaaaaaaaa';
const NS = 'gpux-lse-01jdq3m5x0aaaaaaaaaaaaaaaa';

/** An AdmissionReview v1 as the API server posts it for `kubectl run` (fields as real servers send). */
function review(spec: Record<string, unknown>, operation = 'CREATE'): unknown {
  return JSON.parse(
    JSON.stringify({
      kind: 'AdmissionReview',
      apiVersion: 'admission.k8s.io/v1',
      request: {
        uid: '705ab4f5-6393-11e8-b7cc-42010a800002',
        kind: { group: '', version: 'v1', kind: 'Pod' },
        resource: { group: '', version: 'v1', resource: 'pods' },
        requestKind: { group: '', version: 'v1', kind: 'Pod' },
        requestResource: { group: '', version: 'v1', resource: 'pods' },
        name: 'trainer',
        namespace: NS,
        operation,
        userInfo: {
          username: `system:serviceaccount:${NS}:lse-01jdq3m5x0aaaaaaaaaaaaaaaa`,
          uid: 'b6a4b2b1-0000-4000-8000-000000000001',
          groups: [
            'system:serviceaccounts',
            `system:serviceaccounts:${NS}`,
            'system:authenticated',
          ],
        },
        object: {
          kind: 'Pod',
          apiVersion: 'v1',
          metadata: { name: 'trainer', namespace: NS, labels: { run: 'trainer' } },
          spec,
          status: {},
        },
        oldObject: null,
        dryRun: false,
        options: {
          kind: 'CreateOptions',
          apiVersion: 'meta.k8s.io/v1',
          fieldManager: 'kubectl-run',
        },
      },
    }),
  );
}

const TOLERATIONS = [
  { key: 'gpux.io/lease', operator: 'Equal', value: ID, effect: 'NoSchedule' },
  { key: 'nvidia.com/gpu', operator: 'Exists', effect: 'NoSchedule' },
  {
    key: 'node.kubernetes.io/not-ready',
    operator: 'Exists',
    effect: 'NoExecute',
    tolerationSeconds: 300,
  },
  {
    key: 'node.kubernetes.io/unreachable',
    operator: 'Exists',
    effect: 'NoExecute',
    tolerationSeconds: 300,
  },
];
const AFFINITY = {
  nodeAffinity: {
    requiredDuringSchedulingIgnoredDuringExecution: {
      nodeSelectorTerms: [
        { matchExpressions: [{ key: 'gpux.io/lease', operator: 'In', values: [ID] }] },
      ],
    },
  },
};

function decode(answer: ReturnType<typeof admissionResponse>): unknown {
  return JSON.parse(Buffer.from(answer.response.patch ?? '', 'base64').toString('utf8'));
}

describe('the placement webhook (issue 13): every pod of a lease lands on its nodes only', () => {
  it("overwrites the customer's node selector, affinity and tolerations", () => {
    const r = parseAdmissionReview(
      review({
        containers: [{ name: 'c', image: 'pytorch/pytorch' }],
        nodeSelector: { 'gpux.io/lease': 'lse_someoneelse0aaaaaaaaaaaaaa', pool: 'a100' },
        affinity: {
          nodeAffinity: {
            requiredDuringSchedulingIgnoredDuringExecution: {
              nodeSelectorTerms: [
                { matchExpressions: [{ key: 'zone', operator: 'In', values: ['x'] }] },
              ],
            },
          },
        },
        tolerations: [{ operator: 'Exists' }],
      }),
    );
    expect(r).toBeDefined();
    const answer = admissionResponse(r!, ID);
    expect(answer).toMatchObject({
      apiVersion: 'admission.k8s.io/v1',
      kind: 'AdmissionReview',
      response: {
        uid: '705ab4f5-6393-11e8-b7cc-42010a800002',
        allowed: true,
        patchType: 'JSONPatch',
      },
    });
    expect(decode(answer)).toEqual([
      { op: 'add', path: '/spec/nodeSelector', value: { 'gpux.io/lease': ID } },
      { op: 'add', path: '/spec/affinity', value: AFFINITY },
      { op: 'add', path: '/spec/tolerations', value: TOLERATIONS },
    ]);
  });

  it('adds them to a pod that set none; a hostname pin is kept (ANDed with the lease label)', () => {
    expect(placementPatch({ spec: { containers: [] } }, ID)).toEqual([
      { op: 'add', path: '/spec/nodeSelector', value: { 'gpux.io/lease': ID } },
      { op: 'add', path: '/spec/affinity', value: AFFINITY },
      { op: 'add', path: '/spec/tolerations', value: TOLERATIONS },
    ]);
    const r = parseAdmissionReview(
      review({ containers: [], nodeSelector: { 'kubernetes.io/hostname': 'gpu-node-a' } }),
    );
    expect(decode(admissionResponse(r!, ID))).toContainEqual({
      op: 'add',
      path: '/spec/nodeSelector',
      value: { 'gpux.io/lease': ID, 'kubernetes.io/hostname': 'gpu-node-a' },
    });
  });

  it('lets other operations and unlabelled namespaces through unchanged; refuses when it cannot tell', () => {
    const update = parseAdmissionReview(review({ containers: [] }, 'UPDATE'))!;
    expect(admissionResponse(update, ID).response).toEqual({
      uid: update.request!.uid,
      allowed: true,
    });
    const create = parseAdmissionReview(review({ containers: [] }))!;
    expect(admissionResponse(create, undefined).response).toEqual({
      uid: create.request!.uid,
      allowed: true,
    });
    expect(admissionResponse(create, undefined, true).response).toMatchObject({
      allowed: false,
      status: { code: 503 },
    });
    expect(
      parseAdmissionReview({
        apiVersion: 'admission.k8s.io/v1beta1',
        kind: 'AdmissionReview',
        request: { uid: 'x' },
      }),
    ).toBeUndefined();
  });
});
