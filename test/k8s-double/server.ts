// A Kubernetes API server double for tests (issue 13): HTTPS with its own CA,
// bearer tokens (a static admin token, tokens it mints through TokenRequest),
// discovery, objects in memory with 404 / 409 and resourceVersion, RBAC
// evaluated from the Roles and bindings it holds (with the escalation check),
// SelfSubjectAccessReview (JSON and kubectl's protobuf), exec over WebSocket,
// and a recording of every request. Never shipped: test/ only.
//
// This file starts one and hands the test its handle; README.md's Layout
// says where the rest is.

import { randomBytes } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { createServer, request as httpsRequest } from 'node:https';
import type { Server } from 'node:https';
import type { AddressInfo } from 'node:net';

import { defaults } from './admission.js';
import { Auth } from './auth.js';
import type { Double } from './context.js';
import { startControlPlane } from './control-plane.js';
import { kindOf } from './dispatch.js';
import { EXEC_PROTOCOLS } from './exec.js';
import { endSessionsWithPods } from './pods.js';
import { MASTERS } from './rbac.js';
import type { UserInfo } from './rbac.js';
import { serveHttp, serveUpgrade } from './requests.js';
import { findKind } from './resources.js';
import type { ResourceDef } from './resources.js';
import { Store } from './store.js';
import type { KObject } from './store.js';
import { makeCerts } from './tls.js';
import type { K8sDouble, K8sDoubleOptions, Recording, RecordedRequest } from './types.js';
import { JSON_TYPE } from './wire.js';

export { forbiddenWhy } from './auth.js';
export type { UserInfo } from './rbac.js';
export type { ResourcePath } from './route.js';
export type { KObject } from './store.js';
export type { K8sDouble, K8sDoubleOptions, RecordedRequest } from './types.js';

function kubeconfig(url: string, caPem: string, token: string, namespace?: string): string {
  return JSON.stringify(
    {
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [
        {
          name: 'k8s-double',
          cluster: {
            server: url,
            'certificate-authority-data': Buffer.from(caPem).toString('base64'),
          },
        },
      ],
      users: [{ name: 'user', user: { token } }],
      contexts: [
        {
          name: 'k8s-double',
          context: {
            cluster: 'k8s-double',
            user: 'user',
            ...(namespace === undefined ? {} : { namespace }),
          },
        },
      ],
      'current-context': 'k8s-double',
    },
    null,
    2,
  );
}

/** One HTTPS request to `url`; the status and the body, parsed as JSON when it is JSON. */
function call(
  url: string,
  caPem: string,
  token: string,
  method: string,
  o: { body?: unknown; contentType?: string },
): Promise<{ status: number; body: unknown }> {
  return new Promise((resolve, reject) => {
    const text = o.body === undefined ? undefined : JSON.stringify(o.body);
    const req = httpsRequest(
      url,
      {
        method,
        ca: caPem,
        headers: {
          authorization: `Bearer ${token}`,
          ...(text === undefined
            ? {}
            : {
                'content-type': o.contentType ?? JSON_TYPE,
                'content-length': Buffer.byteLength(text),
              }),
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const raw = Buffer.concat(chunks).toString('utf8');
          let body: unknown = raw;
          try {
            body = JSON.parse(raw);
          } catch {
            // text (logs, health)
          }
          resolve({ status: res.statusCode ?? 0, body });
        });
      },
    );
    req.on('error', reject);
    req.end(text);
  });
}

function kindDef(apiVersion: string | undefined, kind: string | undefined): ResourceDef {
  const d = findKind(apiVersion ?? '', kind ?? '');
  if (d === undefined) throw new Error(`unknown kind ${String(apiVersion)} ${String(kind)}`);
  return d;
}

export async function startK8sDouble(opts: K8sDoubleOptions = {}): Promise<K8sDouble> {
  const certs = makeCerts();
  const adminToken = opts.adminToken ?? `admin-${randomBytes(16).toString('hex')}`;
  let clockOffset = 0;
  const now = (): number => Date.now() + clockOffset * 1000;
  const store = new Store(now);
  const admin: UserInfo = { username: 'admin', groups: [MASTERS, 'system:authenticated'] };
  const auth = new Auth(
    store,
    now,
    [[adminToken, admin], ...Object.entries(opts.tokens ?? {})],
    opts.maxTokenSeconds ?? 86_400,
  );
  const ctx: Double = {
    opts,
    store,
    certs,
    auth,
    now,
    timers: new Set(),
    watches: new Set(),
    sessions: new Map(),
    execProtocols: EXEC_PROTOCOLS,
    kind: kindOf,
  };
  startControlPlane(ctx);
  endSessionsWithPods(ctx);

  const requests: RecordedRequest[] = [];
  let seq = 0;
  const record = (req: IncomingMessage): Recording => {
    const url = new URL(req.url ?? '/', 'https://double');
    const rec: Recording = {
      seq: ++seq,
      method: req.method ?? 'GET',
      path: url.pathname,
      query: url.search.replace(/^\?/, ''),
      user: '',
      status: 0,
    };
    requests.push(rec);
    return rec;
  };
  const server: Server = createServer({ cert: certs.certPem, key: certs.keyPem }, (req, res) =>
    serveHttp(ctx, req, res, record(req)),
  );
  server.on('upgrade', (req: IncomingMessage, socket, head: Buffer) =>
    serveUpgrade(ctx, req, socket, head, record(req)),
  );

  await new Promise<void>((resolve) => server.listen(opts.port ?? 0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  const url = `https://127.0.0.1:${port}`;

  return {
    url,
    port,
    caPem: certs.caPem,
    certs,
    adminToken,
    requests,
    store,
    calls(user) {
      return requests
        .filter((r) => r.verb !== undefined && (user === undefined || r.user === user))
        .map((r) => {
          const res = `${r.resource ?? ''}${r.subresource ? `/${r.subresource}` : ''}${r.group ? `.${r.group}` : ''}`;
          return `${r.verb ?? ''} ${res} ${r.namespace ?? ''}/${r.name ?? ''} ${r.status}`;
        });
    },
    kubeconfigFor(token, namespace) {
      return kubeconfig(url, certs.caPem, token, namespace);
    },
    addToken(token, user) {
      auth.addToken(token, user);
    },
    advanceClock(seconds) {
      clockOffset += seconds;
    },
    setExecProtocols(protocols) {
      ctx.execProtocols = protocols;
    },
    get(apiVersion, kind, namespace, name) {
      return store.get(kindDef(apiVersion, kind), namespace, name);
    },
    list(apiVersion, kind, namespace = '') {
      return store.list(kindDef(apiVersion, kind), namespace);
    },
    put(obj) {
      const d = kindDef(obj.apiVersion, obj.kind);
      const existing = store.get(d, obj.metadata.namespace ?? '', obj.metadata.name ?? '');
      if (existing !== undefined) {
        return store.update(d, {
          ...structuredClone(obj),
          metadata: { ...obj.metadata, resourceVersion: existing.metadata.resourceVersion ?? '' },
        });
      }
      const o: KObject = structuredClone(obj);
      defaults(d, o);
      if (obj['status'] !== undefined) o['status'] = obj['status'];
      return store.insert(d, o);
    },
    mintToken(namespace, serviceAccount, seconds = 3600, bound) {
      let b: { kind: string; name: string; uid: string } | undefined;
      if (bound !== undefined) {
        const bd = findKind('v1', bound.kind);
        const o = bd === undefined ? undefined : store.get(bd, namespace, bound.name);
        if (o === undefined) throw new Error(`no ${bound.kind} ${namespace}/${bound.name}`);
        b = { ...bound, uid: o.metadata.uid ?? '' };
      }
      return auth.mint(namespace, serviceAccount, seconds, b).token;
    },
    call(method, path, o = {}) {
      return call(`${url}${path}`, certs.caPem, o.token ?? adminToken, method, o);
    },
    async stop() {
      for (const t of ctx.timers) clearTimeout(t);
      for (const end of [...ctx.sessions.keys()]) end();
      for (const res of ctx.watches) res.end();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
