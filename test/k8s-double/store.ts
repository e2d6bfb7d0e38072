// The double's objects, in memory: one map per resource keyed by
// namespace/name, a cluster-wide resourceVersion counter, and an event for
// every change (watches and controllers listen to it).

import { randomUUID } from 'node:crypto';
import { EventEmitter } from 'node:events';

import type { ResourceDef } from './resources.js';
import { groupVersion } from './resources.js';

export interface Meta {
  name?: string;
  generateName?: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  generation?: number;
  creationTimestamp?: string;
  deletionTimestamp?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  ownerReferences?: { apiVersion: string; kind: string; name: string; uid: string }[];
  finalizers?: string[];
}

export interface KObject {
  apiVersion?: string;
  kind?: string;
  metadata: Meta;
  [field: string]: unknown;
}

export type WatchType = 'ADDED' | 'MODIFIED' | 'DELETED';

export interface Change {
  type: WatchType;
  def: ResourceDef;
  object: KObject;
}

const key = (def: ResourceDef): string => `${def.group}|${def.plural}`;
const id = (namespace: string, name: string): string => `${namespace}/${name}`;

/** RFC 3339 to the second, as Kubernetes writes timestamps. */
export function timestamp(ms: number): string {
  return new Date(Math.floor(ms / 1000) * 1000).toISOString().replace('.000Z', 'Z');
}

export class Store {
  private readonly maps = new Map<string, Map<string, KObject>>();
  private version = 1000;
  readonly changes = new EventEmitter();

  constructor(private readonly now: () => number) {
    this.changes.setMaxListeners(0);
  }

  get resourceVersion(): string {
    return String(this.version);
  }

  private map(def: ResourceDef): Map<string, KObject> {
    let m = this.maps.get(key(def));
    if (m === undefined) {
      m = new Map();
      this.maps.set(key(def), m);
    }
    return m;
  }

  get(def: ResourceDef, namespace: string, name: string): KObject | undefined {
    const o = this.map(def).get(id(def.namespaced ? namespace : '', name));
    return o === undefined ? undefined : structuredClone(o);
  }

  /** Objects of `def`, in one namespace or ('' ) all, sorted by namespace and name. */
  list(def: ResourceDef, namespace: string): KObject[] {
    const out: KObject[] = [];
    for (const o of this.map(def).values()) {
      if (def.namespaced && namespace !== '' && o.metadata.namespace !== namespace) continue;
      out.push(structuredClone(o));
    }
    const k = (o: KObject): string => id(o.metadata.namespace ?? '', o.metadata.name ?? '');
    return out.sort((a, b) => (k(a) < k(b) ? -1 : k(a) > k(b) ? 1 : 0));
  }

  /** Stores a new object: fills uid, resourceVersion, creationTimestamp, generation. */
  insert(def: ResourceDef, obj: KObject): KObject {
    const o = structuredClone(obj);
    o.apiVersion = groupVersion(def);
    o.kind = def.kind;
    o.metadata.uid = randomUUID();
    o.metadata.resourceVersion = String(++this.version);
    o.metadata.creationTimestamp = timestamp(this.now());
    if ('spec' in o) o.metadata.generation = 1;
    if (!def.namespaced) delete o.metadata.namespace;
    this.map(def).set(id(o.metadata.namespace ?? '', o.metadata.name ?? ''), o);
    this.emit('ADDED', def, o);
    return structuredClone(o);
  }

  /** Replaces an existing object with a new resourceVersion (generation bumped on a spec change). */
  update(def: ResourceDef, obj: KObject): KObject {
    const m = this.map(def);
    const k = id(def.namespaced ? (obj.metadata.namespace ?? '') : '', obj.metadata.name ?? '');
    const old = m.get(k);
    if (old === undefined) throw new Error(`update of a missing object ${k}`);
    const o = structuredClone(obj);
    o.apiVersion = groupVersion(def);
    o.kind = def.kind;
    o.metadata.uid = old.metadata.uid ?? '';
    o.metadata.creationTimestamp = old.metadata.creationTimestamp ?? '';
    if (old.metadata.generation !== undefined) {
      o.metadata.generation =
        JSON.stringify(old['spec']) === JSON.stringify(o['spec'])
          ? old.metadata.generation
          : old.metadata.generation + 1;
    }
    if (
      JSON.stringify(old) ===
      JSON.stringify({
        ...o,
        metadata: { ...o.metadata, resourceVersion: old.metadata.resourceVersion },
      })
    ) {
      return structuredClone(old); // no change: no new resourceVersion, as real servers do
    }
    o.metadata.resourceVersion = String(++this.version);
    m.set(k, o);
    this.emit('MODIFIED', def, o);
    return structuredClone(o);
  }

  remove(def: ResourceDef, namespace: string, name: string): KObject | undefined {
    const m = this.map(def);
    const k = id(def.namespaced ? namespace : '', name);
    const old = m.get(k);
    if (old === undefined) return undefined;
    m.delete(k);
    old.metadata.resourceVersion = String(++this.version);
    this.emit('DELETED', def, old);
    return structuredClone(old);
  }

  /** Every namespaced object in `namespace`, across resources. */
  inNamespace(namespace: string): { def: ResourceDef; object: KObject }[] {
    const out: { def: ResourceDef; object: KObject }[] = [];
    for (const [, m] of this.maps) {
      for (const o of m.values()) {
        if (o.metadata.namespace === namespace && o.kind !== 'Namespace') {
          out.push({ def: this.defOf(o), object: structuredClone(o) });
        }
      }
    }
    return out;
  }

  private readonly defs = new Map<string, ResourceDef>();

  private defOf(o: KObject): ResourceDef {
    const d = this.defs.get(`${o.apiVersion ?? ''}|${o.kind ?? ''}`);
    if (d === undefined) throw new Error(`unknown kind ${o.kind ?? ''}`);
    return d;
  }

  private emit(type: WatchType, def: ResourceDef, o: KObject): void {
    this.defs.set(`${groupVersion(def)}|${def.kind}`, def);
    const change: Change = { type, def, object: structuredClone(o) };
    this.changes.emit('change', change);
  }
}

type Requirement = (labels: Record<string, string>) => boolean;

/** Parses a label selector (`a=b,c!=d,e in (x,y),f notin (z),g,!h`). */
export function parseLabelSelector(selector: string): Requirement[] {
  const reqs: Requirement[] = [];
  const parts: string[] = [];
  let depth = 0;
  let cur = '';
  for (const ch of selector) {
    if (ch === '(') depth++;
    if (ch === ')') depth--;
    if (ch === ',' && depth === 0) {
      parts.push(cur);
      cur = '';
    } else cur += ch;
  }
  if (cur.trim() !== '') parts.push(cur);
  for (const raw of parts) {
    const p = raw.trim();
    let m: RegExpMatchArray | null;
    if ((m = /^([^\s!=]+)\s+(in|notin)\s+\(([^)]*)\)$/.exec(p)) !== null) {
      const [, k = '', op, list = ''] = m;
      const values = list.split(',').map((v) => v.trim());
      reqs.push(
        op === 'in'
          ? (l) => l[k] !== undefined && values.includes(l[k])
          : (l) => l[k] === undefined || !values.includes(l[k]),
      );
    } else if ((m = /^([^\s!=]+)\s*!=\s*(\S*)$/.exec(p)) !== null) {
      const [, k = '', v = ''] = m;
      reqs.push((l) => l[k] !== v);
    } else if ((m = /^([^\s!=]+)\s*==?\s*(\S*)$/.exec(p)) !== null) {
      const [, k = '', v = ''] = m;
      reqs.push((l) => l[k] === v);
    } else if ((m = /^!\s*(\S+)$/.exec(p)) !== null) {
      const [, k = ''] = m;
      reqs.push((l) => l[k] === undefined);
    } else if (/^\S+$/.test(p)) {
      reqs.push((l) => l[p] !== undefined);
    } else {
      throw new Error(`unable to parse requirement: ${p}`);
    }
  }
  return reqs;
}

export function matchesLabels(obj: KObject, reqs: Requirement[]): boolean {
  const labels = obj.metadata.labels ?? {};
  return reqs.every((r) => r(labels));
}

/** Field selectors: `metadata.name=x`, `metadata.namespace=y`, `spec.nodeName=z`, `status.phase=Running`. */
export function matchesFields(obj: KObject, selector: string): boolean {
  for (const raw of selector.split(',')) {
    const p = raw.trim();
    if (p === '') continue;
    const m = /^([\w.]+)\s*(==|=|!=)\s*(.*)$/.exec(p);
    if (m === null) throw new Error(`invalid field selector: ${p}`);
    const [, path = '', op, value] = m;
    let cur: unknown = obj;
    for (const seg of path.split('.')) {
      cur =
        typeof cur === 'object' && cur !== null ? (cur as Record<string, unknown>)[seg] : undefined;
    }
    const actual = typeof cur === 'string' ? cur : cur === undefined ? '' : JSON.stringify(cur);
    if (op === '!=' ? actual === value : actual !== value) return false;
  }
  return true;
}
