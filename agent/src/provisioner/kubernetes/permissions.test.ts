import { describe, expect, it } from 'vitest';

import { PROVISIONER_CALLS } from './calls.js';
import { AGENT_CLUSTER_RULES, LEASE_ROLE_RULES, PROVISIONER_RULES, allows } from './permissions.js';

describe('RBAC of the Kubernetes provisioner (D28)', () => {
  it('the agent holds every permission a lease Role grants (RBAC escalation check)', () => {
    for (const rule of LEASE_ROLE_RULES) {
      for (const group of rule.apiGroups) {
        for (const resource of rule.resources) {
          for (const verb of rule.verbs) {
            expect(
              allows(AGENT_CLUSTER_RULES, verb, group, resource),
              `${verb} ${group}/${resource}`,
            ).toBe(true);
          }
        }
      }
    }
  });

  it('a lease Role grants nothing cluster-wide and no way to widen itself', () => {
    for (const [group, resource] of [
      ['', 'nodes'],
      ['', 'namespaces'],
      ['', 'resourcequotas'],
      ['', 'limitranges'],
      ['', 'serviceaccounts/token'],
      ['networking.k8s.io', 'networkpolicies'],
      ['rbac.authorization.k8s.io', 'roles'],
      ['rbac.authorization.k8s.io', 'rolebindings'],
    ] as const) {
      expect(allows(LEASE_ROLE_RULES, 'create', group, resource)).toBe(false);
      expect(allows(LEASE_ROLE_RULES, 'patch', group, resource)).toBe(false);
    }
    // Nothing with a wildcard, nor escalate / bind / impersonate.
    for (const r of LEASE_ROLE_RULES) {
      expect([...r.apiGroups, ...r.resources, ...r.verbs]).not.toContain('*');
      for (const v of ['escalate', 'bind', 'impersonate']) expect(r.verbs).not.toContain(v);
    }
  });

  it('the agent has no escalate, bind or impersonate either', () => {
    for (const r of AGENT_CLUSTER_RULES) {
      for (const v of ['escalate', 'bind', 'impersonate', '*']) expect(r.verbs).not.toContain(v);
    }
  });

  it('every call the agent makes in Kubernetes mode is allowed by its ClusterRole', () => {
    for (const c of PROVISIONER_CALLS) {
      expect(
        allows(AGENT_CLUSTER_RULES, c.verb, c.group, c.resource),
        `${c.verb} ${c.group}/${c.resource}`,
      ).toBe(true);
    }
  });

  it('the provisioner holds nothing it does not call (beyond what a lease Role grants)', () => {
    const called = new Set(PROVISIONER_CALLS.map((c) => `${c.verb} ${c.group}/${c.resource}`));
    for (const r of PROVISIONER_RULES) {
      for (const group of r.apiGroups) {
        for (const resource of r.resources) {
          for (const verb of r.verbs)
            expect(called, `${verb} ${group}/${resource}`).toContain(
              `${verb} ${group}/${resource}`,
            );
        }
      }
    }
  });
});
