// `gpux kubeconfig LEASE --merge`: the lease's kubeconfig (one cluster, one
// user, one context) merged into the user's kubeconfig without touching
// its other entries: the lease's entries are named after its context (so
// two leases never collide), an entry of that name is replaced, every
// other entry and the current context are kept (the current context is
// set only when there was none).

import { parseDocument, stringify } from 'yaml';

import { CliError, EXIT } from './exit.js';

interface Named {
  readonly name: string;
  readonly [k: string]: unknown;
}

interface KubeConfig {
  apiVersion?: string;
  kind?: string;
  clusters?: Named[];
  users?: Named[];
  contexts?: Named[];
  'current-context'?: string;
  [k: string]: unknown;
}

function parse(text: string, what: string): KubeConfig {
  const doc = parseDocument(text);
  if (doc.errors.length > 0) {
    throw new CliError(`${what} is not YAML: ${doc.errors[0]?.message ?? ''}`, EXIT.usage);
  }
  const value: unknown = doc.toJS();
  if (value === null || value === undefined) return {};
  if (typeof value !== 'object' || Array.isArray(value)) {
    throw new CliError(`${what} is not a kubeconfig (not a mapping)`, EXIT.usage);
  }
  return value as KubeConfig;
}

/** The lease's kubeconfig with its cluster, user and context all named `name`. */
export function renamed(text: string, name: string): KubeConfig {
  const k = parse(text, "the lease's kubeconfig");
  const [cluster] = k.clusters ?? [];
  const [user] = k.users ?? [];
  const [context] = k.contexts ?? [];
  if (cluster === undefined || user === undefined || context === undefined) {
    throw new CliError("the lease's kubeconfig has no cluster, user or context", EXIT.server);
  }
  const inner = (context['context'] ?? {}) as Record<string, unknown>;
  return {
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ ...cluster, name }],
    users: [{ ...user, name }],
    contexts: [{ ...context, name, context: { ...inner, cluster: name, user: name } }],
    'current-context': name,
  };
}

function upsert(list: Named[] | undefined, entry: Named | undefined): Named[] {
  const kept = (list ?? []).filter((e) => e.name !== entry?.name);
  return entry === undefined ? kept : [...kept, entry];
}

/** `existing` (a kubeconfig's text, '' for none) with the lease's `entries` merged in; YAML. */
export function merge(existing: string, entries: KubeConfig): string {
  const k = parse(existing, 'the kubeconfig');
  const merged: KubeConfig = {
    ...k,
    apiVersion: k.apiVersion ?? 'v1',
    kind: k.kind ?? 'Config',
    clusters: upsert(k.clusters, entries.clusters?.[0]),
    users: upsert(k.users, entries.users?.[0]),
    contexts: upsert(k.contexts, entries.contexts?.[0]),
  };
  const current = k['current-context'];
  const chosen = current === undefined || current === '' ? entries['current-context'] : current;
  if (chosen !== undefined) merged['current-context'] = chosen;
  return stringify(merged);
}
