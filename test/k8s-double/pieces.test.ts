// The Kubernetes API double's parts that need no server: RBAC rule matching
// and the escalation check's coverage, label selectors, the three patch
// types, and the protobuf SelfSubjectAccessReview decoder (the real kubectl
// 1.33 exercises it end to end in kubectl.test.ts).

import { describe, expect, it } from 'vitest';

import { jsonPatch, mergePatch, strategicMergePatch } from './patch.js';
import { decodeSelfSubjectAccessReview } from './protobuf.js';
import { ruleAllows, uncovered } from './rbac.js';
import { matchesLabels, parseLabelSelector } from './store.js';
import type { KObject } from './store.js';

const attrs = (
  verb: string,
  resource: string,
  subresource = '',
  name = '',
): Parameters<typeof ruleAllows>[1] => ({
  verb,
  group: '',
  resource,
  subresource,
  namespace: 'ns',
  name,
});

describe('RBAC rules', () => {
  it('match verbs, resources, subresources and names like the real authorizer', () => {
    const rule = { apiGroups: [''], resources: ['pods', 'pods/exec'], verbs: ['get', 'create'] };
    expect(ruleAllows(rule, attrs('get', 'pods'))).toBe(true);
    expect(ruleAllows(rule, attrs('create', 'pods', 'exec'))).toBe(true);
    expect(ruleAllows(rule, attrs('create', 'pods', 'log'))).toBe(false);
    expect(ruleAllows(rule, attrs('delete', 'pods'))).toBe(false);
    expect(
      ruleAllows(
        { apiGroups: [''], resources: ['pods/*'], verbs: ['*'] },
        attrs('get', 'pods', 'log'),
      ),
    ).toBe(true);
    expect(
      ruleAllows(
        { apiGroups: [''], resources: ['*/scale'], verbs: ['*'] },
        attrs('get', 'pods', 'scale'),
      ),
    ).toBe(true);
    const named = { apiGroups: [''], resources: ['secrets'], verbs: ['get'], resourceNames: ['a'] };
    expect(ruleAllows(named, attrs('get', 'secrets', '', 'a'))).toBe(true);
    expect(ruleAllows(named, attrs('get', 'secrets', '', 'b'))).toBe(false);
    expect(ruleAllows(named, attrs('get', 'secrets'))).toBe(false);
  });

  it('the escalation check lists every permission not held', () => {
    const owner = [
      { apiGroups: [''], resources: ['pods', 'secrets'], verbs: ['get', 'list'] },
      { apiGroups: ['apps'], resources: ['*'], verbs: ['*'] },
    ];
    expect(uncovered(owner, [{ apiGroups: [''], resources: ['pods'], verbs: ['list'] }])).toEqual(
      [],
    );
    expect(
      uncovered(owner, [
        { apiGroups: ['apps'], resources: ['deployments/scale'], verbs: ['patch'] },
      ]),
    ).toEqual([]);
    expect(
      uncovered(owner, [
        { apiGroups: [''], resources: ['pods', 'pods/exec'], verbs: ['get', 'create'] },
      ]),
    ).toEqual([
      '{APIGroups:[""], Resources:["pods/exec"], Verbs:["get"]}',
      '{APIGroups:[""], Resources:["pods"], Verbs:["create"]}',
      '{APIGroups:[""], Resources:["pods/exec"], Verbs:["create"]}',
    ]);
    // A wildcard is covered only by a wildcard.
    expect(uncovered(owner, [{ apiGroups: [''], resources: ['pods'], verbs: ['*'] }])).toHaveLength(
      1,
    );
  });
});

describe('label selectors', () => {
  const obj = (labels: Record<string, string>): KObject => ({ metadata: { labels } });
  it.each([
    ['a=1', true],
    ['a==1', true],
    ['a!=1', false],
    ['a in (1,2)', true],
    ['a notin (1,2)', false],
    ['a,b', false],
    ['!b', true],
    ['a=1,c=3', true],
    ['a=1,c=4', false],
  ])('%s', (selector, expected) => {
    expect(matchesLabels(obj({ a: '1', c: '3' }), parseLabelSelector(selector))).toBe(expected);
  });
});

describe('patches', () => {
  it('merge patch removes keys set to null and replaces lists', () => {
    expect(mergePatch({ a: { b: 1, c: 2 }, l: [1, 2] }, { a: { b: null }, l: [3] })).toEqual({
      a: { c: 2 },
      l: [3],
    });
  });

  it('strategic merge patch merges containers by name and replaces tolerations', () => {
    const pod = {
      spec: {
        containers: [
          { name: 'a', image: 'x' },
          { name: 'b', image: 'y' },
        ],
        tolerations: [{ key: 'k1' }],
      },
    };
    expect(
      strategicMergePatch(pod, {
        spec: {
          containers: [
            { name: 'b', image: 'z' },
            { name: 'a', $patch: 'delete' },
          ],
          tolerations: [{ key: 'k2' }],
        },
      }),
    ).toEqual({ spec: { containers: [{ name: 'b', image: 'z' }], tolerations: [{ key: 'k2' }] } });
  });

  it('JSON patch adds, replaces, removes and tests', () => {
    const doc = { metadata: { labels: { 'a/b': '1' } }, list: [1, 2] };
    expect(
      jsonPatch(doc, [
        { op: 'remove', path: '/metadata/labels/a~1b' },
        { op: 'add', path: '/list/-', value: 3 },
        { op: 'replace', path: '/list/0', value: 0 },
        { op: 'test', path: '/list/1', value: 2 },
      ]),
    ).toEqual({ metadata: { labels: {} }, list: [0, 2, 3] });
    expect(() => jsonPatch(doc, [{ op: 'test', path: '/list/0', value: 9 }])).toThrow(
      'test failed',
    );
    expect(doc.list).toEqual([1, 2]);
  });
});

describe('protobuf SelfSubjectAccessReview', () => {
  it('decodes k8s\\0 + runtime.Unknown{typeMeta, raw: SSAR{spec{resourceAttributes}}}', () => {
    const body = Buffer.from(
      '6b3873000a320a17617574686f72697a6174696f6e2e6b38732e696f2f7631121753656c665375626a6563744163636573735265766965771221121f0a1d0a076c656173652d6112066372656174652a04706f64733204657865631a002200',
      'hex',
    );
    expect(decodeSelfSubjectAccessReview(body)).toEqual({
      apiVersion: 'authorization.k8s.io/v1',
      kind: 'SelfSubjectAccessReview',
      spec: {
        resourceAttributes: {
          namespace: 'lease-a',
          verb: 'create',
          resource: 'pods',
          subresource: 'exec',
        },
      },
    });
    expect(() => decodeSelfSubjectAccessReview(Buffer.from('{}'))).toThrow(
      'not a Kubernetes protobuf body',
    );
  });
});
