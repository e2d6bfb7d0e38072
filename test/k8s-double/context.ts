// What the double's parts share: the state of one running double (Double),
// a resource request as its handler sees it, and the shape of a handler in
// the dispatch table (dispatch.ts).

import type { IncomingMessage, ServerResponse } from 'node:http';

import type { Auth } from './auth.js';
import type { UserInfo } from './rbac.js';
import type { ResourceDef } from './resources.js';
import type { ResourcePath } from './route.js';
import type { KObject, Store } from './store.js';
import type { ServingCerts } from './tls.js';
import type { K8sDoubleOptions } from './types.js';

/** Open exec and port-forward sessions: their end (close the socket), by the pod's uid and its kill. */
export type Sessions = Map<() => void, { podUid: string; kill: () => void }>;

/** Deletes object `namespace/name` of `d` (propagation: Background, Foreground or Orphan); what was deleted. */
export type Remove = (
  ctx: Double,
  d: ResourceDef,
  namespace: string,
  name: string,
  propagation: string,
) => KObject | undefined;

/** One running double. */
export interface Double {
  readonly opts: K8sDoubleOptions;
  readonly store: Store;
  readonly certs: ServingCerts;
  readonly auth: Auth;
  /** The double's clock (advanceClock moves it ahead). */
  readonly now: () => number;
  /** Pending timers (namespaces' termination), cleared on stop. */
  readonly timers: Set<NodeJS.Timeout>;
  /** Open watches, ended on stop. */
  readonly watches: Set<ServerResponse>;
  readonly sessions: Sessions;
  /** The exec subprotocols spoken, best first. */
  execProtocols: readonly string[];
  /** How a resource kind behaves where generic CRUD asks (dispatch.ts's table). */
  kind(d: ResourceDef): ResourceHandler;
}

/** A resource request, authenticated, authorized and with its body decoded. */
export interface ResourceRequest {
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  readonly user: UserInfo;
  readonly def: ResourceDef;
  readonly path: ResourcePath;
  readonly method: string;
  /** The RBAC verb (get, list, watch, create, update, patch, delete, deletecollection). */
  readonly verb: string;
  readonly query: URLSearchParams;
  readonly contentType: string;
  /** The raw body (patches are applied from it). */
  readonly body: Buffer;
  /** The body decoded (JSON, or protobuf where the handler decodes it); undefined when empty. */
  readonly parsed: unknown;
  readonly dryRun: boolean;
}

/**
 * What a resource (or one of its subresources) does beyond generic CRUD.
 * Every part is optional: a resource without an entry is plain CRUD.
 */
export interface ResourceHandler {
  /** Decodes a protobuf body (kubectl 1.32+ posts reviews so); without it such bodies are 415. */
  readonly decodeProtobuf?: (body: Buffer) => unknown;
  /** Answers the request itself; without it, generic CRUD (crud.ts) answers. */
  readonly serve?: (ctx: Double, r: ResourceRequest) => void | Promise<void>;
  /** Deletes one object; without it, the store drops it and its dependents (crud.ts). */
  readonly remove?: Remove;
  /** What a DELETE answers (the object, marked deleted); without it, a Success Status. */
  readonly deleted?: (ctx: Double, gone: KObject) => object;
}
