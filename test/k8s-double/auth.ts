// Who a request is from and what it may do, in one place for HTTP requests
// and WebSocket upgrades (exec, port-forward) alike: bearer tokens (static
// ones, and the ones TokenRequest mints, which die at their expiry and with
// their ServiceAccount or bound object), impersonation (`kubectl --as`), and
// RBAC over the Roles and bindings in the store, refused with the real
// server's 403 messages.

import { randomBytes, randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';

import { authorize, MASTERS, rulesFor } from './rbac.js';
import type { Attributes, PolicyRule, RbacObjects, UserInfo } from './rbac.js';
import { findKind, resource } from './resources.js';
import { ApiError, errors } from './status.js';
import type { Store } from './store.js';

interface MintedToken {
  user: UserInfo;
  namespace: string;
  serviceAccount: string;
  serviceAccountUid: string;
  bound?: { kind: string; name: string; uid: string };
  expiresAt: number;
}

/** The message of a 403, as the real authorizer words it. */
export function forbiddenWhy(user: UserInfo, a: Attributes): string {
  const res = a.subresource === '' ? a.resource : `${a.resource}/${a.subresource}`;
  const where = a.namespace === '' ? 'at the cluster scope' : `in the namespace "${a.namespace}"`;
  return `User "${user.username}" cannot ${a.verb} resource "${res}" in API group "${a.group}" ${where}`;
}

const RBAC = 'rbac.authorization.k8s.io';

export class Auth {
  /** The Roles and bindings RBAC reads, from the store. */
  readonly rbac: RbacObjects;
  private readonly statics = new Map<string, UserInfo>();
  private readonly minted = new Map<string, MintedToken>();

  constructor(
    private readonly store: Store,
    private readonly now: () => number,
    tokens: Iterable<[string, UserInfo]>,
    /** TokenRequest's cap on a token's life (--service-account-max-token-expiration). */
    private readonly maxTokenSeconds: number,
  ) {
    for (const [t, u] of tokens) this.statics.set(t, u);
    this.rbac = {
      role: (ns, name) => store.get(resource(RBAC, 'roles'), ns, name) as never,
      clusterRole: (name) => store.get(resource(RBAC, 'clusterroles'), '', name) as never,
      roleBindings: (ns) => store.list(resource(RBAC, 'rolebindings'), ns) as never,
      clusterRoleBindings: () => store.list(resource(RBAC, 'clusterrolebindings'), '') as never,
    };
  }

  addToken(token: string, user: UserInfo): void {
    this.statics.set(token, user);
  }

  /**
   * Who the request is from: its bearer token's identity, or the identity it
   * impersonates (Impersonate-User / Impersonate-Group, as `kubectl --as`),
   * when the token's identity may `impersonate` it. undefined: no valid token.
   */
  authenticate(req: IncomingMessage): UserInfo | undefined {
    const user = this.tokenUser(req);
    const as = req.headers['impersonate-user'];
    if (user === undefined || typeof as !== 'string') return user;
    const sa = /^system:serviceaccount:([^:]+):([^:]+)$/.exec(as);
    const attrs: Attributes = {
      verb: 'impersonate',
      group: '',
      resource: sa === null ? 'users' : 'serviceaccounts',
      subresource: '',
      namespace: sa === null ? '' : (sa[1] ?? ''),
      name: sa === null ? as : (sa[2] ?? ''),
    };
    if (!this.allows(user, attrs)) {
      throw errors.forbidden('', attrs.resource, as, forbiddenWhy(user, attrs));
    }
    const h = req.headers['impersonate-group'];
    const groups = h === undefined ? [] : Array.isArray(h) ? h : [h];
    if (sa !== null) groups.push('system:serviceaccounts', `system:serviceaccounts:${sa[1] ?? ''}`);
    return { username: as, groups: [...groups, 'system:authenticated'] };
  }

  private tokenUser(req: IncomingMessage): UserInfo | undefined {
    const h = req.headers.authorization ?? '';
    const m = /^Bearer\s+(\S+)$/i.exec(h);
    if (m === null) return undefined;
    const token = m[1] ?? '';
    const s = this.statics.get(token);
    if (s !== undefined) return s;
    const t = this.minted.get(token);
    if (t === undefined) return undefined;
    if (this.now() >= t.expiresAt) return undefined;
    const sa = this.store.get(resource('', 'serviceaccounts'), t.namespace, t.serviceAccount);
    if (sa?.metadata.uid !== t.serviceAccountUid) return undefined;
    if (t.bound !== undefined) {
      const bd = findKind('v1', t.bound.kind);
      const o = bd === undefined ? undefined : this.store.get(bd, t.namespace, t.bound.name);
      if (o?.metadata.uid !== t.bound.uid) return undefined;
    }
    return t.user;
  }

  /** Whether RBAC allows `a` to `user` (system:masters: always). */
  allows(user: UserInfo, a: Attributes): boolean {
    return authorize(this.rbac, user, a);
  }

  /** A resource request `user` may not make is refused with 403. */
  authorize(user: UserInfo, a: Attributes): void {
    if (this.allows(user, a)) return;
    const res = a.subresource === '' ? a.resource : `${a.resource}/${a.subresource}`;
    throw errors.forbidden(a.group, res, a.name, forbiddenWhy(user, a));
  }

  /** A non-resource request (discovery, /version, /healthz…) `user` may not make is refused with 403. */
  authorizePath(user: UserInfo, method: string, path: string): void {
    const verb = method === 'GET' ? 'get' : method.toLowerCase();
    const a = { verb, group: '', resource: '', subresource: '', namespace: '', name: '', path };
    if (this.allows(user, a)) return;
    throw new ApiError(
      403,
      'Forbidden',
      `forbidden: User "${user.username}" cannot ${method.toLowerCase()} path "${path}"`,
    );
  }

  /** The rules `user` holds in `namespace` (cluster-wide ones included). */
  rules(user: UserInfo, namespace: string): PolicyRule[] {
    return user.groups.includes(MASTERS)
      ? [{ apiGroups: ['*'], resources: ['*'], verbs: ['*'] }]
      : rulesFor(this.rbac, user, namespace);
  }

  /**
   * A token of ServiceAccount `namespace/name` for `requested` seconds, at
   * most maxTokenSeconds (TokenRequest), bound to `bound`'s uid; `seconds`
   * is what was granted.
   */
  mint(
    namespace: string,
    name: string,
    requested: number,
    bound?: { kind: string; name: string; uid: string },
  ): { token: string; expiresAt: number; seconds: number } {
    const sa = this.store.get(resource('', 'serviceaccounts'), namespace, name);
    if (sa === undefined) throw errors.notFound('', 'serviceaccounts', name);
    const seconds = Math.min(requested, this.maxTokenSeconds);
    const now = this.now();
    const expiresAt = now + seconds * 1000;
    const username = `system:serviceaccount:${namespace}:${name}`;
    const b64 = (o: object): string => Buffer.from(JSON.stringify(o)).toString('base64url');
    const token = [
      b64({ alg: 'RS256', kid: 'k8s-double' }),
      b64({
        aud: ['https://kubernetes.default.svc'],
        exp: Math.floor(expiresAt / 1000),
        iat: Math.floor(now / 1000),
        sub: username,
        jti: randomUUID(),
      }),
      randomBytes(32).toString('base64url'),
    ].join('.');
    this.minted.set(token, {
      user: {
        username,
        uid: sa.metadata.uid ?? '',
        groups: [
          'system:serviceaccounts',
          `system:serviceaccounts:${namespace}`,
          'system:authenticated',
        ],
      },
      namespace,
      serviceAccount: name,
      serviceAccountUid: sa.metadata.uid ?? '',
      ...(bound === undefined ? {} : { bound }),
      expiresAt,
    });
    return { token, expiresAt, seconds };
  }
}
