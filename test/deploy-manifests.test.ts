// The agent's Kubernetes manifests (deploy/agent, issue 13): rendered with the
// real `kubectl kustomize` (offline), every object validated against the
// Kubernetes schemas of kubernetes-models, the ClusterRole checked against
// the RBAC contract of the provisioner (permissions.ts, D28/D30), and the
// pieces checked to fit together (settings, mounts, ports, names).

import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

import yaml from 'js-yaml';
import {
  MutatingWebhookConfiguration,
  ValidatingWebhookConfiguration,
} from 'kubernetes-models/admissionregistration.k8s.io/v1';
import { Deployment } from 'kubernetes-models/apps/v1';
import { ClusterRole, ClusterRoleBinding } from 'kubernetes-models/rbac.authorization.k8s.io/v1';
import {
  ConfigMap,
  Namespace,
  PersistentVolumeClaim,
  Secret,
  Service,
  ServiceAccount,
} from 'kubernetes-models/v1';
import type { IDeployment } from 'kubernetes-models/apps/v1';
import type { IMutatingWebhookConfiguration } from 'kubernetes-models/admissionregistration.k8s.io/v1';
import type {
  IClusterRole,
  IClusterRoleBinding,
} from 'kubernetes-models/rbac.authorization.k8s.io/v1';
import type { IConfigMap, ISecret, IService } from 'kubernetes-models/v1';
import { describe, expect, it } from 'vitest';

import { AGENT_SETTINGS } from '../agent/src/settings.js';
import {
  AGENT_CLUSTER_RULES,
  LEASE_ROLE_RULES,
  PROVISIONER_RULES,
  allows,
} from '../agent/src/provisioner/kubernetes/permissions.js';

const root = fileURLToPath(new URL('..', import.meta.url));

/** The label of every lease's namespace (objects.ts of the Kubernetes provisioner, D30). */
const LEASE_LABEL = 'gpux.io/lease';

/**
 * Settings of the Kubernetes provisioner (issue 13) that the manifests set
 * before agent/src/settings.ts lists them (they come with the provisioner);
 * once AGENT_SETTINGS holds them this list is redundant and can go.
 */
const KUBERNETES_SETTINGS = [
  'GPUX_KUBE_PUBLIC_SERVER',
  'GPUX_WORKSPACE_IMAGE',
  'GPUX_WORKSPACE_COMMAND',
  'GPUX_WEBHOOK_LISTEN',
  'GPUX_WEBHOOK_CERT_FILE',
  'GPUX_WEBHOOK_KEY_FILE',
];

interface KubeObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string };
}

/** Every kind the manifests may hold, with its schema. */
const MODELS: Record<string, new (data: never) => { validate(): void }> = {
  'v1/Namespace': Namespace,
  'v1/ServiceAccount': ServiceAccount,
  'v1/ConfigMap': ConfigMap,
  'v1/Secret': Secret,
  'v1/Service': Service,
  'v1/PersistentVolumeClaim': PersistentVolumeClaim,
  'apps/v1/Deployment': Deployment,
  'rbac.authorization.k8s.io/v1/ClusterRole': ClusterRole,
  'rbac.authorization.k8s.io/v1/ClusterRoleBinding': ClusterRoleBinding,
  'admissionregistration.k8s.io/v1/MutatingWebhookConfiguration': MutatingWebhookConfiguration,
  'admissionregistration.k8s.io/v1/ValidatingWebhookConfiguration': ValidatingWebhookConfiguration,
};

/** The release's version (package.json): the images' tag and the git tag. */
const VERSION = (
  JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as {
    version: string;
  }
).version;

function render(dir: string): KubeObject[] {
  const out = execFileSync('kubectl', ['kustomize', dir], { cwd: root, encoding: 'utf8' });
  return yaml.loadAll(out) as KubeObject[];
}

/**
 * Kustomize wraps a generated Secret's base64 at 70 columns; the API server
 * (Go's base64 decoder) ignores the line breaks, the schema's "byte"
 * format does not: validate the value without them.
 */
function unwrapped(o: KubeObject): KubeObject {
  if (o.kind !== 'Secret') return o;
  const data = (o as ISecret).data ?? {};
  return {
    ...o,
    data: Object.fromEntries(Object.entries(data).map(([k, v]) => [k, v.replace(/\n/g, '')])),
  } as KubeObject;
}

function one<T>(objects: readonly KubeObject[], kind: string, name?: string): T {
  const found = objects.filter(
    (o) => o.kind === kind && (name === undefined || o.metadata.name === name),
  );
  expect(found, `${kind} ${name ?? ''}`).toHaveLength(1);
  return found[0] as T;
}

function portOf(hostPort: string | undefined): number {
  const m = /:(\d+)$/.exec(hostPort ?? '');
  expect(m, `host:port, got ${hostPort}`).not.toBeNull();
  return Number(m?.[1]);
}

/** Every (verb, group, resource) a list of rules names. */
function triples(
  rules: readonly {
    apiGroups?: readonly string[];
    resources?: readonly string[];
    verbs: readonly string[];
  }[],
): string[] {
  return rules.flatMap((r) =>
    (r.apiGroups ?? []).flatMap((g) =>
      (r.resources ?? []).flatMap((res) => r.verbs.map((v) => `${v} ${g}/${res}`)),
    ),
  );
}

describe.each([
  ['the base', 'deploy/agent'],
  ['the example overlay', 'deploy/agent/overlays/example'],
  ['the example overlay with mutual TLS', 'deploy/agent/overlays/example-mtls'],
])('deploy/agent: %s', (_, dir) => {
  const objects = render(dir);

  it('renders only objects of known kinds, each valid against its Kubernetes schema', () => {
    expect(objects.length).toBeGreaterThan(0);
    for (const o of objects) {
      const Model = MODELS[`${o.apiVersion}/${o.kind}`];
      expect(Model, `no schema for ${o.apiVersion} ${o.kind}`).toBeDefined();
      expect(
        () => new (Model as NonNullable<typeof Model>)(unwrapped(o) as never).validate(),
        `${o.kind} ${o.metadata.name}`,
      ).not.toThrow();
    }
  });

  it('puts every namespaced object in gpux-system and creates that namespace', () => {
    one(objects, 'Namespace', 'gpux-system');
    const clusterScoped = [
      'Namespace',
      'ClusterRole',
      'ClusterRoleBinding',
      'MutatingWebhookConfiguration',
    ];
    for (const o of objects) {
      if (clusterScoped.includes(o.kind)) expect(o.metadata.namespace).toBeUndefined();
      else expect(o.metadata.namespace, `${o.kind} ${o.metadata.name}`).toBe('gpux-system');
    }
  });

  it('gives the agent a ClusterRole holding exactly AGENT_CLUSTER_RULES, bound to its own ServiceAccount', () => {
    const role = one<IClusterRole>(objects, 'ClusterRole');
    const rules = (role.rules ?? []).map((r) => ({
      apiGroups: r.apiGroups ?? [],
      resources: r.resources ?? [],
      verbs: r.verbs,
    }));
    expect(rules).toEqual(AGENT_CLUSTER_RULES.map((r) => ({ ...r })));
    // No wildcard, no resource names or URLs, and no way around RBAC's
    // escalation check: the agent holds what it grants instead.
    for (const r of role.rules ?? []) {
      expect(r.resourceNames).toBeUndefined();
      expect(r.nonResourceURLs).toBeUndefined();
      for (const list of [r.apiGroups ?? [], r.resources ?? [], r.verbs]) {
        expect(list).not.toContain('*');
      }
      for (const forbidden of ['escalate', 'bind', 'impersonate']) {
        expect(r.verbs).not.toContain(forbidden);
      }
    }
    const held = role.rules as Parameters<typeof allows>[0];
    for (const t of [...triples(PROVISIONER_RULES), ...triples(LEASE_ROLE_RULES)]) {
      const [verb = '', groupResource = ''] = t.split(' ');
      const slash = groupResource.indexOf('/');
      expect(
        allows(held, verb, groupResource.slice(0, slash), groupResource.slice(slash + 1)),
        t,
      ).toBe(true);
    }
    // Every rule is one of the contract's: nothing beyond what is called or granted.
    expect(new Set(triples(rules))).toEqual(
      new Set([...triples(PROVISIONER_RULES), ...triples(LEASE_ROLE_RULES)]),
    );

    const sa = one<KubeObject>(objects, 'ServiceAccount');
    const binding = one<IClusterRoleBinding>(objects, 'ClusterRoleBinding');
    expect(binding.roleRef).toEqual({
      apiGroup: 'rbac.authorization.k8s.io',
      kind: 'ClusterRole',
      name: role.metadata?.name,
    });
    expect(binding.subjects).toEqual([
      { kind: 'ServiceAccount', name: sa.metadata.name, namespace: 'gpux-system' },
    ]);
    const deployment = one<IDeployment>(objects, 'Deployment');
    expect(deployment.spec?.template.spec?.serviceAccountName).toBe(sa.metadata.name);
  });

  it('runs one agent, replaced with Recreate, on the kubernetes provisioner, its state on a volume claim', () => {
    const deployment = one<IDeployment>(objects, 'Deployment');
    expect(deployment.spec?.replicas).toBe(1);
    expect(deployment.spec?.strategy).toEqual({ type: 'Recreate' });
    const pod = deployment.spec?.template.spec;
    const container = pod?.containers[0];
    expect(pod?.containers).toHaveLength(1);

    const settingsName = container?.envFrom?.[0]?.configMapRef?.name;
    const settings = one<IConfigMap>(objects, 'ConfigMap', settingsName).data ?? {};
    expect(settings['PROVISIONER']).toBe('kubernetes');

    // Every setting is one the agent reads.
    const known = new Set([...AGENT_SETTINGS.map((s) => s.name), ...KUBERNETES_SETTINGS]);
    for (const key of Object.keys(settings)) expect(known, key).toContain(key);
    // The token comes from the Secret, never from the ConfigMap.
    expect(settings['GPUX_TOKEN']).toBeUndefined();
    const token = container?.env?.find((e) => e.name === 'GPUX_TOKEN');
    expect(token?.valueFrom?.secretKeyRef?.key).toBe('GPUX_TOKEN');

    const mountOf = (path: string | undefined): { volume: string; sub: string } => {
      const m = container?.volumeMounts?.find((v) => path?.startsWith(`${v.mountPath}/`));
      expect(m, `no volume mounted for ${path}`).toBeDefined();
      return { volume: m?.name ?? '', sub: (path ?? '').slice((m?.mountPath.length ?? 0) + 1) };
    };
    const volume = (name: string) => pod?.volumes?.find((v) => v.name === name);

    // The state directory (the SSH host key) is on the claim, and survives a restart.
    const state = container?.volumeMounts?.find((v) => v.mountPath === settings['GPUX_STATE_DIR']);
    const claim = one<KubeObject>(objects, 'PersistentVolumeClaim');
    expect(volume(state?.name ?? '')?.persistentVolumeClaim?.claimName).toBe(claim.metadata.name);

    // NATS_CREDS is the Secret's nats-creds key, from the same Secret as the token.
    const creds = mountOf(settings['NATS_CREDS']);
    const credsSecret = volume(creds.volume)?.secret;
    expect(credsSecret?.secretName).toBe(token?.valueFrom?.secretKeyRef?.name);
    expect(credsSecret?.items).toContainEqual({ key: 'nats-creds', path: creds.sub });

    // The webhook's certificate and key are the TLS Secret's.
    const cert = mountOf(settings['GPUX_WEBHOOK_CERT_FILE']);
    const key = mountOf(settings['GPUX_WEBHOOK_KEY_FILE']);
    expect([cert.sub, key.sub]).toEqual(['tls.crt', 'tls.key']);
    expect(cert.volume).toBe(key.volume);
    const tlsSecretName = volume(cert.volume)?.secret?.secretName;
    expect(tlsSecretName).toMatch(/^gpux-agent-webhook-tls/);

    // What the overlay generates is what the Deployment references.
    if (dir.includes('overlays')) {
      const secrets = objects.filter((o) => o.kind === 'Secret') as (ISecret & KubeObject)[];
      const tokenSecret = secrets.find((s) => s.metadata.name === credsSecret?.secretName);
      expect(Object.keys(tokenSecret?.data ?? {}).sort()).toEqual(['GPUX_TOKEN', 'nats-creds']);
      const tls = secrets.find((s) => s.metadata.name === tlsSecretName);
      expect(tls?.type).toBe('kubernetes.io/tls');
      expect(Object.keys(tls?.data ?? {}).sort()).toEqual(['tls.crt', 'tls.key']);
      for (const name of [
        'EXCHANGE_GRPC_URL',
        'GPUX_CLUSTER_ID',
        'NATS_URL',
        'GPUX_SSH_ADVERTISE_HOST',
        'GPUX_KUBE_PUBLIC_SERVER',
      ]) {
        expect(settings[name], name).toBeDefined();
      }
      // The image by the documented scheme (deploy/images/README.md), at this release's version.
      expect(container?.image).toBe(`ghcr.io/gpux/agent:${VERSION}`);
    }
  });

  it('exposes the SSH gateway on the port it listens on (the port the agent reports)', () => {
    const deployment = one<IDeployment>(objects, 'Deployment');
    const container = deployment.spec?.template.spec?.containers[0];
    const settingsName = container?.envFrom?.[0]?.configMapRef?.name;
    const settings = one<IConfigMap>(objects, 'ConfigMap', settingsName).data ?? {};
    const listen = portOf(settings['GPUX_SSH_LISTEN']);
    expect(settings['GPUX_SSH_LISTEN']).toMatch(/^0\.0\.0\.0:/);
    expect(container?.ports).toContainEqual({
      name: 'ssh',
      containerPort: listen,
      protocol: 'TCP',
    });
    const ssh = one<IService>(objects, 'Service', 'gpux-agent-ssh');
    expect(ssh.spec?.type).toBe('LoadBalancer');
    expect(ssh.spec?.ports).toEqual([
      { name: 'ssh', port: listen, targetPort: 'ssh', protocol: 'TCP' },
    ]);
    expect(ssh.spec?.selector).toEqual(deployment.spec?.selector.matchLabels);

    const webhookPort = portOf(settings['GPUX_WEBHOOK_LISTEN']);
    expect(container?.ports).toContainEqual({
      name: 'webhook',
      containerPort: webhookPort,
      protocol: 'TCP',
    });
  });

  it('probes the agent on GPUX_METRICS_LISTEN: alive by /healthz, ready by /readyz; the webhook and SSH Services serve a pod that is not ready (issue 23)', () => {
    const deployment = one<IDeployment>(objects, 'Deployment');
    const container = deployment.spec?.template.spec?.containers[0];
    const settingsName = container?.envFrom?.[0]?.configMapRef?.name;
    const settings = one<IConfigMap>(objects, 'ConfigMap', settingsName).data ?? {};
    expect(settings['GPUX_METRICS_LISTEN']).toMatch(/^0\.0\.0\.0:/);
    expect(container?.ports).toContainEqual({
      name: 'metrics',
      containerPort: portOf(settings['GPUX_METRICS_LISTEN']),
      protocol: 'TCP',
    });
    const get = (path: string) => ({ path, port: 'metrics' });
    expect(container?.startupProbe?.httpGet).toEqual(get('/healthz'));
    expect(container?.livenessProbe?.httpGet).toEqual(get('/healthz'));
    expect(container?.readinessProbe?.httpGet).toEqual(get('/readyz'));
    // The startup probe allows the minute a start may take; the pod's grace period the drain.
    const startup = container?.startupProbe;
    expect(
      (startup?.periodSeconds ?? 10) * (startup?.failureThreshold ?? 3),
    ).toBeGreaterThanOrEqual(60);
    for (const name of ['gpux-agent-webhook', 'gpux-agent-ssh']) {
      expect(one<IService>(objects, 'Service', name).spec?.publishNotReadyAddresses, name).toBe(
        true,
      );
    }
  });

  it('registers the placement webhook: lease namespaces, pods CREATE/UPDATE, v1, fail closed', () => {
    const config = one<IMutatingWebhookConfiguration>(objects, 'MutatingWebhookConfiguration');
    expect(config.webhooks).toHaveLength(1);
    const hook = config.webhooks?.[0];
    expect(hook?.failurePolicy).toBe('Fail');
    expect(hook?.sideEffects).toBe('None');
    expect(hook?.admissionReviewVersions).toEqual(['v1']);
    expect(hook?.namespaceSelector).toEqual({
      matchExpressions: [{ key: LEASE_LABEL, operator: 'Exists' }],
    });
    expect(hook?.objectSelector).toBeUndefined();
    expect(hook?.rules).toEqual([
      {
        apiGroups: [''],
        apiVersions: ['v1'],
        operations: ['CREATE', 'UPDATE'],
        resources: ['pods'],
        scope: 'Namespaced',
      },
    ]);
    // It calls the webhook's Service, which sends to the agent's webhook port.
    const target = hook?.clientConfig.service;
    const service = one<IService>(objects, 'Service', target?.name);
    expect(target?.namespace).toBe('gpux-system');
    expect(service.spec?.ports).toEqual([
      { name: 'https', port: target?.port, targetPort: 'webhook', protocol: 'TCP' },
    ]);
    // The overlay gives the API server the CA to trust; the base leaves it to the overlay.
    if (dir.includes('overlays')) expect(hook?.clientConfig.caBundle).toMatch(/^[A-Za-z0-9+/]+=*$/);
    else expect(hook?.clientConfig.caBundle).toBeUndefined();
  });

  it('mounts the exchange CA and client certificate from an optional Secret, used only when the overlay makes it', () => {
    const deployment = one<IDeployment>(objects, 'Deployment');
    const pod = deployment.spec?.template.spec;
    const container = pod?.containers[0];
    const settingsName = container?.envFrom?.[0]?.configMapRef?.name;
    const settings = one<IConfigMap>(objects, 'ConfigMap', settingsName).data ?? {};
    const mount = container?.volumeMounts?.find((m) => m.mountPath === '/etc/gpux/exchange-tls');
    const secret = pod?.volumes?.find((v) => v.name === mount?.name)?.secret;
    expect(mount?.readOnly).toBe(true);
    expect(secret?.secretName).toMatch(/^gpux-agent-exchange-tls/);
    const generated = objects.find(
      (o) => o.kind === 'Secret' && o.metadata.name === secret?.secretName,
    ) as (ISecret & KubeObject) | undefined;
    const files = ['GPUX_GRPC_CA_FILE', 'GPUX_GRPC_CERT_FILE', 'GPUX_GRPC_KEY_FILE'];
    if (dir.endsWith('example-mtls')) {
      // Each setting names a key of that Secret under the mount.
      expect(Object.keys(generated?.data ?? {}).sort()).toEqual(['ca.crt', 'tls.crt', 'tls.key']);
      expect(files.map((f) => settings[f])).toEqual(
        ['ca.crt', 'tls.crt', 'tls.key'].map((k) => `/etc/gpux/exchange-tls/${k}`),
      );
    } else {
      // Without it the pod still starts (optional) and the agent uses the public CAs.
      expect(secret?.optional).toBe(true);
      expect(generated).toBeUndefined();
      for (const f of files) expect(settings[f], f).toBeUndefined();
    }
  });
});
