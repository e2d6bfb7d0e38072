import yaml from 'js-yaml';
import { describe, expect, it } from 'vitest';

import { buildKubeconfig } from './kubeconfig.js';

describe('kubeconfig (D28)', () => {
  const text = buildKubeconfig({
    clusterName: 'gpux-cls-1',
    server: 'https://api.example:6443',
    caPem: '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n',
    namespace: 'gpux-lse-1',
    userName: 'lse-1',
    token: 'tok"en: with # odd characters',
    comment: ['the server is a placeholder'],
  });

  it('has the real shape: one cluster, one context on the namespace, one user with a token', () => {
    expect(yaml.load(text)).toEqual({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [
        {
          name: 'gpux-cls-1',
          cluster: {
            server: 'https://api.example:6443',
            'certificate-authority-data': Buffer.from(
              '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n',
            ).toString('base64'),
          },
        },
      ],
      contexts: [
        {
          name: 'gpux-cls-1-gpux-lse-1',
          context: { cluster: 'gpux-cls-1', namespace: 'gpux-lse-1', user: 'lse-1' },
        },
      ],
      'current-context': 'gpux-cls-1-gpux-lse-1',
      users: [{ name: 'lse-1', user: { token: 'tok"en: with # odd characters' } }],
      preferences: {},
    });
  });

  it('starts with its comment as YAML comments', () => {
    expect(text.startsWith('# the server is a placeholder\napiVersion: v1\n')).toBe(true);
  });
});
