// Merging a lease's kubeconfig: its entries renamed after the lease, an
// entry of that name replaced, every other entry and the current context
// kept.

import { describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';

import { merge, renamed } from './kubeconfig.js';

const LEASE = stringify({
  apiVersion: 'v1',
  kind: 'Config',
  clusters: [{ name: 'farm', cluster: { server: 'https://farm:6443' } }],
  users: [{ name: 'lease-user', user: { token: 't1' } }],
  contexts: [
    { name: 'farm-ns', context: { cluster: 'farm', user: 'lease-user', namespace: 'ns' } },
  ],
  'current-context': 'farm-ns',
});

describe('kubeconfig merge', () => {
  it('names the lease entries after it', () => {
    expect(renamed(LEASE, 'gpux-lse_1')).toEqual({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: 'gpux-lse_1', cluster: { server: 'https://farm:6443' } }],
      users: [{ name: 'gpux-lse_1', user: { token: 't1' } }],
      contexts: [
        {
          name: 'gpux-lse_1',
          context: { cluster: 'gpux-lse_1', user: 'gpux-lse_1', namespace: 'ns' },
        },
      ],
      'current-context': 'gpux-lse_1',
    });
  });

  it('keeps the others and their current context; replaces its own on a second merge', () => {
    const mine = stringify({
      apiVersion: 'v1',
      kind: 'Config',
      preferences: { colors: true },
      clusters: [{ name: 'prod', cluster: { server: 'https://prod' } }],
      users: [{ name: 'me', user: { token: 'mine' } }],
      contexts: [{ name: 'prod', context: { cluster: 'prod', user: 'me' } }],
      'current-context': 'prod',
    });
    const once = merge(mine, renamed(LEASE, 'gpux-lse_1'));
    const twice = parse(merge(once, renamed(LEASE, 'gpux-lse_1'))) as Record<
      string,
      { name: string }[]
    >;
    expect(twice['current-context']).toBe('prod');
    expect(twice['preferences']).toEqual({ colors: true });
    expect(twice['contexts']?.map((c) => c.name)).toEqual(['prod', 'gpux-lse_1']);
    expect(twice['users']?.map((c) => c.name)).toEqual(['me', 'gpux-lse_1']);
  });

  it('into no kubeconfig: the lease becomes the current context; a file that is not YAML is refused', () => {
    expect(parse(merge('', renamed(LEASE, 'gpux-lse_1')))).toMatchObject({
      'current-context': 'gpux-lse_1',
    });
    expect(() => merge('a: [', renamed(LEASE, 'x'))).toThrow(/not YAML/);
    expect(() => merge('- 1\n- 2\n', renamed(LEASE, 'x'))).toThrow(/not a kubeconfig/);
  });
});
