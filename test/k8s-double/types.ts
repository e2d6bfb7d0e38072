// The double's public types: its options, the recording of a request, and
// the handle a test holds (K8sDouble). index.ts exports them through server.ts.

import type { ExecRunner } from './exec.js';
import type { UserInfo } from './rbac.js';
import type { KObject, Store } from './store.js';
import type { ServingCerts } from './tls.js';

export interface K8sDoubleOptions {
  /** Kubernetes minor version /version reports (the machine's kubectl picks 1.27–1.33 from it). Default 33. */
  readonly minorVersion?: number;
  /** The admin's bearer token (system:masters). Random by default. */
  readonly adminToken?: string;
  /** More static tokens and who they authenticate as. */
  readonly tokens?: Readonly<Record<string, UserInfo>>;
  /** TokenRequest's cap on expirationSeconds (--service-account-max-token-expiration). Default 86 400. */
  readonly maxTokenSeconds?: number;
  /** Assign pods to matching Ready nodes and mark them Running. Default true. */
  readonly scheduler?: boolean;
  /** Deployments/StatefulSets/ReplicaSets create and delete their pods. Default true. */
  readonly controllers?: boolean;
  /** How a pod exec runs locally (default: the command itself, under a pty when tty). */
  readonly execRunner?: ExecRunner;
  /**
   * The URL of a webhook given as a Service reference (clientConfig.service),
   * since Services do not route here. Without it such webhooks fail (and so
   * do pod creations under failurePolicy Fail).
   */
  readonly serviceUrl?: (service: {
    namespace: string;
    name: string;
    port: number;
    path: string;
  }) => string | undefined;
  readonly port?: number;
  /**
   * How long a deleted namespace stays Terminating (its content goes at once,
   * new content is refused with 403). Default 0: gone at once.
   */
  readonly namespaceTerminationMs?: number;
}

export interface RecordedRequest {
  readonly seq: number;
  readonly method: string;
  /** Path without the query. */
  readonly path: string;
  readonly query: string;
  /** Who made it: `admin`, `system:serviceaccount:<ns>:<name>`, or `` if unauthenticated. */
  readonly user: string;
  /** RBAC attributes of a resource request. */
  readonly verb?: string;
  readonly group?: string;
  readonly resource?: string;
  readonly subresource?: string;
  readonly namespace?: string;
  readonly name?: string;
  /** The parsed JSON body of a write. */
  readonly body?: unknown;
  readonly contentType?: string;
  status: number;
}

/** A recording being filled in while its request is served. */
export type Recording = { -readonly [K in keyof RecordedRequest]: RecordedRequest[K] };

export interface K8sDouble {
  readonly url: string;
  readonly port: number;
  readonly caPem: string;
  readonly certs: ServingCerts;
  readonly adminToken: string;
  /** Every request so far, in order. */
  readonly requests: RecordedRequest[];
  /**
   * The resource requests so far (discovery left out), one line each:
   * `<verb> <resource>[/<sub>][.<group>] <ns>/<name> <status>`, e.g.
   * `create rolebindings.rbac.authorization.k8s.io lease-1/buyer 201`;
   * only `user`'s when given.
   */
  calls(user?: string): string[];
  readonly store: Store;
  /** A kubeconfig (JSON, which is YAML) for the double with this token. */
  kubeconfigFor(token: string, namespace?: string): string;
  addToken(token: string, user: UserInfo): void;
  /** Makes tokens' clock run ahead (to expire minted tokens). */
  advanceClock(seconds: number): void;
  /**
   * The exec subprotocols the double speaks from now on, best first (default
   * v5 then v4); `['v4.channel.k8s.io']` is an API server before 1.30, whose
   * exec cannot close stdin alone.
   */
  setExecProtocols(protocols: readonly string[]): void;
  /** Objects as stored, bypassing the API (for assertions and setup). */
  get(apiVersion: string, kind: string, namespace: string, name: string): KObject | undefined;
  list(apiVersion: string, kind: string, namespace?: string): KObject[];
  /** Creates or replaces an object directly, as the admin (setup: nodes, the agent's RBAC). */
  put(obj: KObject): KObject;
  /** Mints a token for a service account as TokenRequest does (setup). */
  mintToken(
    namespace: string,
    serviceAccount: string,
    seconds?: number,
    bound?: { kind: string; name: string },
  ): string;
  /**
   * One HTTPS call to the double (as the admin unless `token` is given); the
   * answer's status and parsed JSON body (or text).
   */
  call(
    method: string,
    path: string,
    opts?: { token?: string; body?: unknown; contentType?: string },
  ): Promise<{ status: number; body: unknown }>;
  stop(): Promise<void>;
}
