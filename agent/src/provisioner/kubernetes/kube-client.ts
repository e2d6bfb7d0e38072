// The few Kubernetes API operations the provisioner uses, over
// @kubernetes/client-node 1.4.0 (pinned: 2.x pulls undici 8, which needs
// Node >= 22.19 and crashes at import on Node 20). Every write follows one
// rule (D30): get, then create or update; 409 AlreadyExists on create → get
// and update; 409 Conflict on update → get again and retry; 404 on delete
// is success.

import { ApiException, CoreV1Api, KubeConfig, KubernetesObjectApi } from '@kubernetes/client-node';
import type { AuthenticationV1TokenRequest, KubernetesObject } from '@kubernetes/client-node';

export interface ObjectRef {
  readonly apiVersion: string;
  readonly kind: string;
  readonly name: string;
  readonly namespace?: string | undefined;
}

export interface KubeStatus {
  readonly code: number;
  /** Status.reason: AlreadyExists, Conflict, NotFound, Forbidden… */
  readonly reason: string;
  readonly message: string;
}

/** The HTTP status and Status reason of a failed call; undefined for a network error. */
export function statusOf(err: unknown): KubeStatus | undefined {
  if (!(err instanceof ApiException)) return undefined;
  const body: unknown = err.body;
  let parsed: { reason?: unknown; message?: unknown } = {};
  if (typeof body === 'string') {
    try {
      parsed = JSON.parse(body) as typeof parsed;
    } catch (err) {
      // Not a Status: its text is the message.
      if (!(err instanceof SyntaxError)) throw err;
      parsed = { message: body };
    }
  } else if (body !== null && typeof body === 'object') parsed = body;
  return {
    code: err.code,
    reason: typeof parsed.reason === 'string' ? parsed.reason : '',
    message: typeof parsed.message === 'string' ? parsed.message : String(err.message),
  };
}

const is = (err: unknown, code: number): boolean => statusOf(err)?.code === code;

export function refOf(o: KubernetesObject): ObjectRef {
  return {
    apiVersion: o.apiVersion ?? '',
    kind: o.kind ?? '',
    name: o.metadata?.name ?? '',
    namespace: o.metadata?.namespace,
  };
}

function header(ref: ObjectRef): KubernetesObject {
  return {
    apiVersion: ref.apiVersion,
    kind: ref.kind,
    metadata:
      ref.namespace === undefined
        ? { name: ref.name }
        : { name: ref.name, namespace: ref.namespace },
  };
}

/** Is every member of `want` in `have` with the same value (arrays: same length, member-wise)? */
export function contains(have: unknown, want: unknown): boolean {
  if (want === null || typeof want !== 'object') return have === want;
  if (Array.isArray(want)) {
    return (
      Array.isArray(have) &&
      have.length === want.length &&
      want.every((w, i) => contains(have[i], w))
    );
  }
  if (have === null || typeof have !== 'object') return false;
  return Object.entries(want).every(([k, w]) =>
    w === undefined ? true : contains((have as Record<string, unknown>)[k], w),
  );
}

/**
 * ensure()'s usual update: the existing object with our labels and
 * annotations merged in and our other members set; undefined when it
 * contains all of them already (members the server defaulted or others
 * added do not count as a difference).
 */
export function merged<T extends KubernetesObject>(existing: T, desired: T): T | undefined {
  const { metadata: want, ...body } = desired;
  const have = existing.metadata ?? {};
  if (
    contains(have.labels ?? {}, want?.labels ?? {}) &&
    contains(have.annotations ?? {}, want?.annotations ?? {}) &&
    contains(existing, body)
  ) {
    return undefined;
  }
  return {
    ...existing,
    ...body,
    metadata: {
      ...have,
      labels: { ...have.labels, ...want?.labels },
      annotations: { ...have.annotations, ...want?.annotations },
    },
  };
}

export interface EnsureResult<T> {
  readonly object: T;
  /** Created or updated now. */
  readonly changed: boolean;
}

const MAX_CONFLICTS = 8;

export class KubeClient {
  readonly objects: KubernetesObjectApi;
  readonly core: CoreV1Api;

  constructor(readonly config: KubeConfig) {
    this.objects = KubernetesObjectApi.makeApiClient(config);
    this.core = config.makeApiClient(CoreV1Api);
  }

  /** The object, or undefined on 404. */
  async read<T extends KubernetesObject>(ref: ObjectRef): Promise<T | undefined> {
    try {
      return await this.objects.read<T>(header(ref) as T & { metadata: { name: string } });
    } catch (err) {
      if (is(err, 404)) return undefined;
      throw err;
    }
  }

  async list<T extends KubernetesObject>(
    apiVersion: string,
    kind: string,
    namespace?: string,
    labelSelector?: string,
  ): Promise<T[]> {
    const res = await this.objects.list<T>(
      apiVersion,
      kind,
      namespace,
      undefined,
      undefined,
      undefined,
      undefined,
      labelSelector,
    );
    return res.items;
  }

  /**
   * Get, then create or update. `update(existing)` returns the object to
   * write, or undefined when the existing one is right as it is (default:
   * `merged`, our members set).
   */
  async ensure<T extends KubernetesObject>(
    desired: T,
    update: (existing: T) => T | undefined = (existing) => merged(existing, desired),
  ): Promise<EnsureResult<T>> {
    const ref = refOf(desired);
    for (let attempt = 0; attempt < MAX_CONFLICTS; attempt++) {
      const existing = await this.read<T>(ref);
      if (existing === undefined) {
        try {
          return { object: await this.objects.create(desired), changed: true };
        } catch (err) {
          if (is(err, 409)) continue; // AlreadyExists: get it and update it
          throw err;
        }
      }
      const next = update(existing);
      if (next === undefined) return { object: existing, changed: false };
      try {
        const body = {
          ...next,
          metadata: { ...next.metadata, resourceVersion: existing.metadata?.resourceVersion },
        } as T;
        return { object: await this.objects.replace(body), changed: true };
      } catch (err) {
        if (is(err, 409) || is(err, 404)) continue; // Conflict (or gone): get again
        throw err;
      }
    }
    throw new Error(
      `${ref.kind} ${ref.namespace ?? ''}/${ref.name}: still conflicting after ${MAX_CONFLICTS} tries`,
    );
  }

  /** Read-modify-write of an existing object; undefined when it does not exist. */
  async modify<T extends KubernetesObject>(
    ref: ObjectRef,
    change: (existing: T) => T | undefined,
  ): Promise<EnsureResult<T> | undefined> {
    for (let attempt = 0; attempt < MAX_CONFLICTS; attempt++) {
      const existing = await this.read<T>(ref);
      if (existing === undefined) return undefined;
      const next = change(existing);
      if (next === undefined) return { object: existing, changed: false };
      try {
        return { object: await this.objects.replace(next), changed: true };
      } catch (err) {
        if (is(err, 409)) continue;
        if (is(err, 404)) return undefined;
        throw err;
      }
    }
    throw new Error(`${ref.kind} ${ref.name}: still conflicting after ${MAX_CONFLICTS} tries`);
  }

  /** Deletes; a 404 is success. Returns whether it was there. */
  async delete(
    ref: ObjectRef,
    options: { gracePeriodSeconds?: number; propagationPolicy?: string } = {},
  ): Promise<boolean> {
    try {
      await this.objects.delete(
        header(ref),
        undefined,
        undefined,
        options.gracePeriodSeconds,
        undefined,
        options.propagationPolicy,
      );
      return true;
    } catch (err) {
      if (is(err, 404)) return false;
      throw err;
    }
  }

  /** POST serviceaccounts/<name>/token. */
  async requestToken(
    namespace: string,
    serviceAccount: string,
    body: AuthenticationV1TokenRequest,
  ): Promise<AuthenticationV1TokenRequest> {
    return this.core.createNamespacedServiceAccountToken({ namespace, name: serviceAccount, body });
  }
}

/** KUBECONFIG when set, else the in-cluster service account. */
export function loadKubeConfig(kubeconfigPath: string | undefined): KubeConfig {
  const kc = new KubeConfig();
  if (kubeconfigPath !== undefined) kc.loadFromFile(kubeconfigPath);
  else kc.loadFromCluster();
  return kc;
}

/** PEM of the CA the API server's certificate is signed by (for the lease kubeconfig). */
export function clusterCaPem(kc: KubeConfig, readFile: (p: string) => Buffer): string {
  const cluster = kc.getCurrentCluster();
  if (cluster === null) throw new Error('the kubeconfig has no current cluster');
  if (cluster.caData !== undefined && cluster.caData !== '') {
    return Buffer.from(cluster.caData, 'base64').toString('utf8');
  }
  if (cluster.caFile !== undefined && cluster.caFile !== '') {
    return readFile(cluster.caFile).toString('utf8');
  }
  throw new Error(`the kubeconfig's cluster ${cluster.name} has no certificate authority`);
}
