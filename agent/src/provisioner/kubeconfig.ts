// One pure builder for the lease's kubeconfig (D28): apiVersion v1, kind
// Config, one cluster (server + certificate-authority-data), one context
// bound to the lease's namespace, one user with a bearer token.

import yaml from 'js-yaml';

export interface KubeconfigInput {
  readonly clusterName: string;
  /** https://host:port of the Kubernetes API server. */
  readonly server: string;
  /** PEM of the CA that signed the API server's certificate. */
  readonly caPem: string;
  readonly namespace: string;
  readonly userName: string;
  readonly token: string;
  /** Lines put at the top as YAML comments (kubectl ignores them). */
  readonly comment?: readonly string[];
}

export interface Kubeconfig {
  readonly apiVersion: 'v1';
  readonly kind: 'Config';
  readonly clusters: readonly [
    { name: string; cluster: { server: string; 'certificate-authority-data': string } },
  ];
  readonly contexts: readonly [
    { name: string; context: { cluster: string; namespace: string; user: string } },
  ];
  readonly 'current-context': string;
  readonly users: readonly [{ name: string; user: { token: string } }];
  readonly preferences: Record<string, never>;
}

export function kubeconfigObject(input: KubeconfigInput): Kubeconfig {
  const context = `${input.clusterName}-${input.namespace}`;
  return {
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [
      {
        name: input.clusterName,
        cluster: {
          server: input.server,
          'certificate-authority-data': Buffer.from(input.caPem).toString('base64'),
        },
      },
    ],
    contexts: [
      {
        name: context,
        context: { cluster: input.clusterName, namespace: input.namespace, user: input.userName },
      },
    ],
    'current-context': context,
    users: [{ name: input.userName, user: { token: input.token } }],
    preferences: {},
  };
}

export function buildKubeconfig(input: KubeconfigInput): string {
  const header = (input.comment ?? []).map((line) => `# ${line}`.trimEnd()).join('\n');
  const body = yaml.dump(kubeconfigObject(input), { lineWidth: -1, noRefs: true });
  return header === '' ? body : `${header}\n${body}`;
}
