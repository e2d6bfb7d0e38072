// What a cluster's control plane does after a write, reduced to what the
// provisioner's tests need: Deployments make a ReplicaSet, ReplicaSets and
// StatefulSets make and delete their pods, and the scheduler puts a pending
// pod on a Ready node whose labels match its node selector and affinity,
// whose taints it tolerates and that has the GPUs it asks for, then marks it
// Running (no image pulls here). A pod that fits nowhere stays Pending with
// PodScheduled=False (Unschedulable), as on a real cluster.

import { createHash, randomBytes } from 'node:crypto';

import { resource } from './resources.js';
import type { ResourceDef } from './resources.js';
import type { KObject, Store } from './store.js';
import { timestamp } from './store.js';
import { parseQuantity } from './quantity.js';

interface Ctx {
  store: Store;
  scheduler: boolean;
  controllers: boolean;
}

type CreatePod = (pod: KObject) => Promise<KObject>;
type Remove = (def: ResourceDef, namespace: string, name: string) => unknown;

interface Toleration {
  key?: string;
  operator?: string;
  value?: string;
  effect?: string;
}
interface Taint {
  key: string;
  value?: string;
  effect: string;
}
interface Expr {
  key: string;
  operator: string;
  values?: string[];
}

function tolerates(tols: Toleration[], t: Taint): boolean {
  return tols.some(
    (tol) =>
      (tol.effect === undefined || tol.effect === '' || tol.effect === t.effect) &&
      (tol.operator === 'Exists'
        ? tol.key === undefined || tol.key === '' || tol.key === t.key
        : tol.key === t.key && (tol.value ?? '') === (t.value ?? '')),
  );
}

function exprMatches(labels: Record<string, string>, e: Expr): boolean {
  const v = labels[e.key];
  switch (e.operator) {
    case 'In':
      return v !== undefined && (e.values ?? []).includes(v);
    case 'NotIn':
      return v === undefined || !(e.values ?? []).includes(v);
    case 'Exists':
      return v !== undefined;
    case 'DoesNotExist':
      return v === undefined;
    default:
      return false;
  }
}

function gpus(pod: KObject): number {
  const spec = (pod['spec'] ?? {}) as {
    containers?: {
      resources?: { requests?: Record<string, unknown>; limits?: Record<string, unknown> };
    }[];
  };
  let n = 0;
  for (const c of spec.containers ?? []) {
    const q = c.resources?.requests?.['nvidia.com/gpu'] ?? c.resources?.limits?.['nvidia.com/gpu'];
    if (q !== undefined) n += parseQuantity(q);
  }
  return n;
}

/** Why `node` cannot take `pod`, or undefined when it can. */
function unfit(pod: KObject, node: KObject, pods: KObject[]): string | undefined {
  const spec = (pod['spec'] ?? {}) as {
    nodeSelector?: Record<string, string>;
    tolerations?: Toleration[];
    affinity?: {
      nodeAffinity?: {
        requiredDuringSchedulingIgnoredDuringExecution?: {
          nodeSelectorTerms?: { matchExpressions?: Expr[] }[];
        };
      };
    };
  };
  const nodeSpec = (node['spec'] ?? {}) as { taints?: Taint[]; unschedulable?: boolean };
  const status = (node['status'] ?? {}) as {
    conditions?: { type: string; status: string }[];
    allocatable?: Record<string, unknown>;
  };
  const labels = node.metadata.labels ?? {};
  const ready = status.conditions?.find((c) => c.type === 'Ready');
  if (ready !== undefined && ready.status !== 'True') return 'node(s) were not ready';
  if (nodeSpec.unschedulable === true) return 'node(s) were unschedulable';
  for (const [k, v] of Object.entries(spec.nodeSelector ?? {})) {
    if (labels[k] !== v) return "node(s) didn't match Pod's node affinity/selector";
  }
  const terms =
    spec.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms;
  if (terms !== undefined && terms.length > 0) {
    if (!terms.some((t) => (t.matchExpressions ?? []).every((e) => exprMatches(labels, e)))) {
      return "node(s) didn't match Pod's node affinity/selector";
    }
  }
  for (const t of nodeSpec.taints ?? []) {
    if (t.effect === 'PreferNoSchedule') continue;
    if (!tolerates(spec.tolerations ?? [], t)) {
      return `node(s) had untolerated taint {${t.key}: ${t.value ?? ''}}`;
    }
  }
  const want = gpus(pod);
  if (want > 0) {
    const have = parseQuantity(status.allocatable?.['nvidia.com/gpu'] ?? 0);
    const used = pods
      .filter(
        (p) => (p['spec'] as { nodeName?: string } | undefined)?.nodeName === node.metadata.name,
      )
      .reduce((s, p) => s + gpus(p), 0);
    if (used + want > have) return 'Insufficient nvidia.com/gpu';
  }
  return undefined;
}

function schedule(store: Store): void {
  const podDef = resource('', 'pods');
  const nodes = store.list(resource('', 'nodes'), '');
  const pods = store.list(podDef, '');
  for (const pod of pods) {
    const spec = (pod['spec'] ?? {}) as {
      nodeName?: string;
      containers?: { name: string; image?: string }[];
    };
    const status = (pod['status'] ?? {}) as { phase?: string };
    if (pod.metadata.deletionTimestamp !== undefined) continue;
    const now = timestamp(Date.now());
    const running = (nodeName: string): KObject => ({
      ...pod,
      spec: { ...spec, nodeName },
      status: {
        phase: 'Running',
        conditions: [
          { type: 'PodScheduled', status: 'True', lastTransitionTime: now },
          { type: 'Initialized', status: 'True', lastTransitionTime: now },
          { type: 'ContainersReady', status: 'True', lastTransitionTime: now },
          { type: 'Ready', status: 'True', lastTransitionTime: now },
        ],
        hostIP: '10.0.0.1',
        podIP: `10.244.${randomBytes(1)[0] ?? 0}.${((randomBytes(1)[0] ?? 0) % 250) + 2}`,
        startTime: now,
        qosClass: (pod['status'] as { qosClass?: string } | undefined)?.qosClass ?? 'BestEffort',
        containerStatuses: (spec.containers ?? []).map((c) => ({
          name: c.name,
          image: c.image,
          ready: true,
          started: true,
          restartCount: 0,
          state: { running: { startedAt: now } },
        })),
      },
    });
    if (spec.nodeName !== undefined && spec.nodeName !== '') {
      if (status.phase === 'Pending') store.update(podDef, running(spec.nodeName));
      continue;
    }
    const reasons = new Map<string, number>();
    let chosen: KObject | undefined;
    const placed = store.list(podDef, '');
    for (const node of nodes) {
      const why = unfit(pod, node, placed);
      if (why === undefined) {
        chosen = node;
        break;
      }
      reasons.set(why, (reasons.get(why) ?? 0) + 1);
    }
    if (chosen !== undefined) {
      store.update(podDef, running(chosen.metadata.name ?? ''));
      continue;
    }
    const message = `0/${nodes.length} nodes are available: ${[...reasons]
      .map(([why, n]) => `${n} ${why}`)
      .join(', ')}.`;
    const conditions = [
      { type: 'PodScheduled', status: 'False', reason: 'Unschedulable', message },
    ];
    const old = (pod['status'] as { conditions?: unknown } | undefined)?.conditions;
    if (JSON.stringify(old) !== JSON.stringify(conditions)) {
      store.update(podDef, { ...pod, status: { ...status, phase: 'Pending', conditions } });
    }
  }
}

interface Workload {
  replicas?: number;
  selector?: { matchLabels?: Record<string, string> };
  template?: {
    metadata?: { labels?: Record<string, string>; annotations?: Record<string, string> };
    spec?: unknown;
  };
}

function ownedBy(o: KObject, owner: KObject): boolean {
  return (o.metadata.ownerReferences ?? []).some((r) => r.uid === owner.metadata.uid);
}

function ownerRef(owner: KObject): {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
  controller: boolean;
  blockOwnerDeletion: boolean;
} {
  return {
    apiVersion: owner.apiVersion ?? '',
    kind: owner.kind ?? '',
    name: owner.metadata.name ?? '',
    uid: owner.metadata.uid ?? '',
    controller: true,
    blockOwnerDeletion: true,
  };
}

function podFrom(owner: KObject, name: string, extraLabels: Record<string, string> = {}): KObject {
  const w = (owner['spec'] ?? {}) as Workload;
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name,
      namespace: owner.metadata.namespace ?? '',
      labels: { ...(w.template?.metadata?.labels ?? {}), ...extraLabels },
      ...(w.template?.metadata?.annotations === undefined
        ? {}
        : { annotations: w.template.metadata.annotations }),
      ownerReferences: [ownerRef(owner)],
    },
    spec: structuredClone(w.template?.spec ?? {}),
  };
}

function setStatus(
  store: Store,
  d: ResourceDef,
  o: KObject,
  status: Record<string, unknown>,
): void {
  const cur = store.get(d, o.metadata.namespace ?? '', o.metadata.name ?? '');
  if (cur === undefined) return;
  const next = {
    ...(cur['status'] as object | undefined),
    ...status,
    observedGeneration: cur.metadata.generation,
  };
  if (JSON.stringify(next) === JSON.stringify(cur['status'])) return;
  store.update(d, { ...cur, status: next });
}

async function reconcileWorkloads(
  store: Store,
  createPod: CreatePod,
  remove: Remove,
): Promise<void> {
  const podDef = resource('', 'pods');
  const rsDef = resource('apps', 'replicasets');
  const deployDef = resource('apps', 'deployments');
  const stsDef = resource('apps', 'statefulsets');
  for (const d of store.list(deployDef, '')) {
    const w = (d['spec'] ?? {}) as Workload;
    const replicas = w.replicas ?? 1;
    const hash = createHash('sha256')
      .update(JSON.stringify(w.template ?? {}))
      .digest('hex')
      .slice(0, 10);
    const ns = d.metadata.namespace ?? '';
    const owned = store.list(rsDef, ns).filter((rs) => ownedBy(rs, d));
    let current = owned.find((rs) => rs.metadata.labels?.['pod-template-hash'] === hash);
    for (const rs of owned) if (rs !== current) remove(rsDef, ns, rs.metadata.name ?? '');
    const template = {
      ...w.template,
      metadata: {
        ...w.template?.metadata,
        labels: { ...(w.template?.metadata?.labels ?? {}), 'pod-template-hash': hash },
      },
    };
    if (current === undefined) {
      current = store.insert(rsDef, {
        metadata: {
          name: `${d.metadata.name ?? ''}-${hash}`,
          namespace: ns,
          labels: template.metadata.labels,
          ownerReferences: [ownerRef(d)],
        },
        spec: { replicas, selector: w.selector ?? {}, template },
      });
    } else if ((current['spec'] as Workload).replicas !== replicas) {
      current = store.update(rsDef, {
        ...current,
        spec: { ...(current['spec'] as object), replicas },
      });
    }
    const ready = store
      .list(podDef, ns)
      .filter(
        (p) => ownedBy(p, current) && (p['status'] as { phase?: string }).phase === 'Running',
      ).length;
    setStatus(store, deployDef, d, {
      replicas,
      updatedReplicas: replicas,
      readyReplicas: ready,
      availableReplicas: ready,
    });
  }
  for (const rs of store.list(rsDef, '')) {
    const w = (rs['spec'] ?? {}) as Workload;
    const replicas = w.replicas ?? 1;
    const ns = rs.metadata.namespace ?? '';
    const pods = store.list(podDef, ns).filter((p) => ownedBy(p, rs));
    for (const p of pods.slice(replicas)) remove(podDef, ns, p.metadata.name ?? '');
    for (let i = pods.length; i < replicas; i++) {
      const suffix = randomBytes(4).toString('hex').slice(0, 5);
      await createPod(podFrom(rs, `${rs.metadata.name ?? ''}-${suffix}`)).catch(() => undefined);
    }
    const ready = store
      .list(podDef, ns)
      .filter(
        (p) => ownedBy(p, rs) && (p['status'] as { phase?: string }).phase === 'Running',
      ).length;
    setStatus(store, rsDef, rs, {
      replicas: Math.min(pods.length, replicas),
      readyReplicas: ready,
      availableReplicas: ready,
    });
  }
  for (const s of store.list(stsDef, '')) {
    const w = (s['spec'] ?? {}) as Workload;
    const replicas = w.replicas ?? 1;
    const ns = s.metadata.namespace ?? '';
    const pods = store.list(podDef, ns).filter((p) => ownedBy(p, s));
    const base = s.metadata.name ?? '';
    for (const p of pods) {
      const ordinal = Number((p.metadata.name ?? '').slice(base.length + 1));
      if (!(ordinal < replicas)) remove(podDef, ns, p.metadata.name ?? '');
    }
    for (let i = 0; i < replicas; i++) {
      const name = `${base}-${i}`;
      if (pods.some((p) => p.metadata.name === name)) continue;
      await createPod(
        podFrom(s, name, {
          'statefulset.kubernetes.io/pod-name': name,
          'apps.kubernetes.io/pod-index': String(i),
        }),
      ).catch(() => undefined);
    }
    const ready = store
      .list(podDef, ns)
      .filter(
        (p) => ownedBy(p, s) && (p['status'] as { phase?: string }).phase === 'Running',
      ).length;
    setStatus(store, stsDef, s, {
      replicas,
      readyReplicas: ready,
      availableReplicas: ready,
      currentReplicas: replicas,
    });
  }
}

export async function runControllers(
  ctx: Ctx,
  createPod: CreatePod,
  remove: Remove,
): Promise<void> {
  if (ctx.controllers) await reconcileWorkloads(ctx.store, createPod, remove);
  if (ctx.scheduler) schedule(ctx.store);
  // Ready counts follow the scheduler's work.
  if (ctx.controllers) await reconcileWorkloads(ctx.store, createPod, remove);
}
