// Mutating admission webhooks, as the API server calls them: every
// MutatingWebhookConfiguration whose rules, namespaceSelector and
// objectSelector match a pod being created gets an AdmissionReview v1 over
// HTTPS (verified with its caBundle), and its JSONPatch is applied; a
// webhook that cannot be called refuses the write under failurePolicy Fail.

import { randomUUID } from 'node:crypto';
import { request } from 'node:https';

import { jsonPatch } from './patch.js';
import type { Json } from './patch.js';
import type { UserInfo } from './rbac.js';
import { findResource } from './resources.js';
import type { ResourceDef } from './resources.js';
import { ApiError } from './status.js';
import type { KObject, Store } from './store.js';
import type { ServingCerts } from './tls.js';

interface Expr {
  key: string;
  operator: string;
  values?: string[];
}
interface Selector {
  matchLabels?: Record<string, string>;
  matchExpressions?: Expr[];
}
interface Rule {
  operations?: string[];
  apiGroups?: string[];
  apiVersions?: string[];
  resources?: string[];
}
interface Webhook {
  name: string;
  clientConfig: {
    url?: string;
    caBundle?: string;
    service?: { namespace: string; name: string; path?: string; port?: number };
  };
  rules?: Rule[];
  failurePolicy?: string;
  namespaceSelector?: Selector;
  objectSelector?: Selector;
  timeoutSeconds?: number;
}

export interface WebhookCtx {
  store: Store;
  certs: ServingCerts;
  nsDef: ResourceDef;
  serviceUrl:
    | ((s: { namespace: string; name: string; port: number; path: string }) => string | undefined)
    | undefined;
}

const any = (list: string[] | undefined, v: string): boolean =>
  list !== undefined && (list.includes('*') || list.includes(v));

export function selectorMatches(
  sel: Selector | undefined,
  labels: Record<string, string>,
): boolean {
  if (sel === undefined) return true;
  for (const [k, v] of Object.entries(sel.matchLabels ?? {})) if (labels[k] !== v) return false;
  for (const e of sel.matchExpressions ?? []) {
    const v = labels[e.key];
    const ok =
      e.operator === 'In'
        ? v !== undefined && (e.values ?? []).includes(v)
        : e.operator === 'NotIn'
          ? v === undefined || !(e.values ?? []).includes(v)
          : e.operator === 'Exists'
            ? v !== undefined
            : e.operator === 'DoesNotExist'
              ? v === undefined
              : false;
    if (!ok) return false;
  }
  return true;
}

function post(
  url: string,
  caPem: string | undefined,
  body: object,
  timeoutMs: number,
): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const text = JSON.stringify(body);
    const req = request(
      url,
      {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) },
        ...(caPem === undefined ? {} : { ca: caPem }),
        timeout: timeoutMs,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          if ((res.statusCode ?? 0) >= 300) {
            reject(new Error(`the server responded with ${res.statusCode ?? 0}`));
            return;
          }
          try {
            resolve(JSON.parse(Buffer.concat(chunks).toString('utf8')));
          } catch (err) {
            reject(err instanceof Error ? err : new Error(String(err)));
          }
        });
      },
    );
    req.on('timeout', () => req.destroy(new Error('context deadline exceeded')));
    req.on('error', reject);
    req.end(text);
  });
}

export async function callMutatingWebhooks(
  ctx: WebhookCtx,
  d: ResourceDef,
  obj: KObject,
  user: UserInfo,
  operation: 'CREATE' | 'UPDATE',
): Promise<KObject> {
  const confDef = findResource(
    'admissionregistration.k8s.io',
    'v1',
    'mutatingwebhookconfigurations',
  );
  const configs = confDef === undefined ? [] : ctx.store.list(confDef, '');
  let current = obj;
  const ns = ctx.store.get(ctx.nsDef, '', obj.metadata.namespace ?? '');
  const nsLabels = ns?.metadata.labels ?? {};
  for (const conf of configs) {
    for (const hook of (conf['webhooks'] as Webhook[] | undefined) ?? []) {
      const ruleOk = (hook.rules ?? []).some(
        (r) =>
          any(r.operations, operation) &&
          any(r.apiGroups, d.group) &&
          any(r.apiVersions, d.version) &&
          any(r.resources, d.plural),
      );
      if (!ruleOk) continue;
      if (!selectorMatches(hook.namespaceSelector, nsLabels)) continue;
      if (!selectorMatches(hook.objectSelector, current.metadata.labels ?? {})) continue;
      const uid = randomUUID();
      const review = {
        apiVersion: 'admission.k8s.io/v1',
        kind: 'AdmissionReview',
        request: {
          uid,
          kind: { group: d.group, version: d.version, kind: d.kind },
          resource: { group: d.group, version: d.version, resource: d.plural },
          requestKind: { group: d.group, version: d.version, kind: d.kind },
          requestResource: { group: d.group, version: d.version, resource: d.plural },
          name: current.metadata.name,
          namespace: current.metadata.namespace,
          operation,
          userInfo: { username: user.username, groups: user.groups },
          object: { ...current, apiVersion: 'v1', kind: d.kind },
          oldObject: null,
          dryRun: false,
          options: { kind: 'CreateOptions', apiVersion: 'meta.k8s.io/v1' },
        },
      };
      const fail = (why: string): ApiError =>
        new ApiError(
          500,
          'InternalError',
          `Internal error occurred: failed calling webhook "${hook.name}": ${why}`,
        );
      let url = hook.clientConfig.url;
      const svc = hook.clientConfig.service;
      if (url === undefined && svc !== undefined) {
        url = ctx.serviceUrl?.({
          namespace: svc.namespace,
          name: svc.name,
          port: svc.port ?? 443,
          path: svc.path ?? '/',
        });
      }
      const ca =
        hook.clientConfig.caBundle === undefined
          ? undefined
          : Buffer.from(hook.clientConfig.caBundle, 'base64').toString('utf8');
      let answer: unknown;
      try {
        if (url === undefined) throw new Error(`service "${svc?.name ?? ''}" not found`);
        answer = await post(url, ca, review, (hook.timeoutSeconds ?? 10) * 1000);
      } catch (err) {
        if (hook.failurePolicy === 'Ignore') continue;
        throw fail(`failed to call webhook: ${err instanceof Error ? err.message : String(err)}`);
      }
      const resp = (
        answer as {
          response?: {
            uid?: string;
            allowed?: boolean;
            patch?: string;
            patchType?: string;
            status?: { code?: number; message?: string; reason?: string };
          };
        }
      ).response;
      if (resp === undefined || resp.uid !== uid) {
        if (hook.failurePolicy === 'Ignore') continue;
        throw fail(`expected response.uid="${uid}", got "${resp?.uid ?? ''}"`);
      }
      if (resp.allowed !== true) {
        throw new ApiError(
          resp.status?.code ?? 400,
          resp.status?.reason ?? 'BadRequest',
          `admission webhook "${hook.name}" denied the request: ${resp.status?.message ?? 'without explanation'}`,
        );
      }
      if (resp.patch !== undefined) {
        if (resp.patchType !== 'JSONPatch')
          throw fail(`unsupported patch type ${String(resp.patchType)}`);
        const ops = JSON.parse(Buffer.from(resp.patch, 'base64').toString('utf8')) as Json;
        current = jsonPatch(current as never, ops) as unknown as KObject;
      }
    }
  }
  return current;
}
