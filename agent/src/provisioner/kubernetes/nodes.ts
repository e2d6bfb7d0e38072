// The cluster's nodes in Kubernetes mode: health and GPU inventory come
// from Node status (the Ready condition, allocatable `nvidia.com/gpu`)
// instead of nvidia-smi, and a lease's nodes carry its label and NoSchedule
// taint. Pure functions over V1Node; the provisioner reads and writes them.

import type { Gpu, NodeHealth } from '@gpux/proto';
import type { V1Node, V1Taint } from '@kubernetes/client-node';

import { LEASE_LABEL } from './objects.js';

export const GPU_RESOURCE = 'nvidia.com/gpu';
/** GPU feature discovery's labels (NVIDIA GPU operator), when present. */
const GPU_PRODUCT_LABEL = 'nvidia.com/gpu.product';
const GPU_MEMORY_LABEL = 'nvidia.com/gpu.memory';

function quantityCount(q: unknown): number {
  if (typeof q === 'number') return Number.isInteger(q) && q > 0 ? q : 0;
  if (typeof q !== 'string' || !/^\d{1,6}$/.test(q.trim())) return 0;
  return Number(q.trim());
}

/**
 * One registered node's health: healthy when the Node exists, its Ready
 * condition is True, it is not cordoned and it offers at least one GPU.
 * GPUs are allocatable `nvidia.com/gpu`, named from GPU feature discovery's
 * labels when present; utilization and temperature are not in Node status (0).
 */
export function nodeHealth(hostname: string, node: V1Node | undefined): NodeHealth {
  if (node === undefined) {
    return { hostname, healthy: false, problem: `no Kubernetes node named ${hostname}`, gpus: [] };
  }
  const labels = node.metadata?.labels ?? {};
  const count = quantityCount(node.status?.allocatable?.[GPU_RESOURCE]);
  const name = labels[GPU_PRODUCT_LABEL] ?? 'NVIDIA GPU';
  const memory = quantityCount(labels[GPU_MEMORY_LABEL]);
  const gpus: Gpu[] = Array.from({ length: count }, (_, index) => ({
    index,
    name,
    uuid: `${hostname}/${GPU_RESOURCE}/${index}`,
    memoryTotalMib: memory,
    utilizationPercent: 0,
    temperatureC: 0,
  }));
  const ready = node.status?.conditions?.find((c) => c.type === 'Ready');
  let problem = '';
  if (ready === undefined) problem = 'the node reports no Ready condition';
  else if (ready.status !== 'True') {
    problem = `the node is not Ready (${ready.reason ?? ready.status}${ready.message ? `: ${ready.message}` : ''})`;
  } else if (node.spec?.unschedulable === true) problem = 'the node is cordoned';
  else if (count === 0) problem = `the node has no allocatable ${GPU_RESOURCE}`;
  return { hostname, healthy: problem === '', problem, gpus };
}

export function leaseTaint(leaseId: string): V1Taint {
  return { key: LEASE_LABEL, value: leaseId, effect: 'NoSchedule' };
}

/**
 * The node with the lease's label and taint (a taint of the same key and
 * effect, a former lease's after a resale, is replaced: Kubernetes keeps one
 * per key and effect). undefined: it has them already.
 */
export function withLease(node: V1Node, leaseId: string): V1Node | undefined {
  const labels = node.metadata?.labels ?? {};
  const taints = node.spec?.taints ?? [];
  const hasLabel = labels[LEASE_LABEL] === leaseId;
  const others = taints.filter((t) => !(t.key === LEASE_LABEL && t.effect === 'NoSchedule'));
  const hasTaint = taints.some(
    (t) => t.key === LEASE_LABEL && t.effect === 'NoSchedule' && t.value === leaseId,
  );
  if (hasLabel && hasTaint && others.length === taints.length - 1) return undefined;
  return {
    ...node,
    metadata: { ...node.metadata, labels: { ...labels, [LEASE_LABEL]: leaseId } },
    spec: { ...node.spec, taints: [...others, leaseTaint(leaseId)] },
  };
}

/**
 * The node without the lease's label and taint; only those carrying this
 * lease's id go (a resale hands the node to the next lease, whose label
 * stays). undefined: nothing of this lease is on it.
 */
export function withoutLease(node: V1Node, leaseId: string): V1Node | undefined {
  const labels = { ...(node.metadata?.labels ?? {}) };
  const taints = node.spec?.taints ?? [];
  const kept = taints.filter((t) => !(t.key === LEASE_LABEL && t.value === leaseId));
  const hadLabel = labels[LEASE_LABEL] === leaseId;
  if (!hadLabel && kept.length === taints.length) return undefined;
  if (hadLabel) delete labels[LEASE_LABEL];
  return {
    ...node,
    metadata: { ...node.metadata, labels },
    spec: { ...node.spec, taints: kept },
  };
}

/** Does the node carry anything of this lease? */
export function carriesLease(node: V1Node, leaseId: string): boolean {
  return withoutLease(node, leaseId) !== undefined;
}

/** The lease ids a node's label and taints name. */
export function leasesOnNode(node: V1Node): string[] {
  const ids = new Set<string>();
  const label = node.metadata?.labels?.[LEASE_LABEL];
  if (label !== undefined) ids.add(label);
  for (const t of node.spec?.taints ?? []) {
    if (t.key === LEASE_LABEL && t.value !== undefined) ids.add(t.value);
  }
  return [...ids];
}
