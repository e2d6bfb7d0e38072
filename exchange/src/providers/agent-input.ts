// The checks of agent-limits.ts that need nothing but the request: run by
// the gRPC server before a call reads or writes anything. What needs the
// cluster or the lease (a heartbeat's nodes are the cluster's, a report's
// endpoints fit the lease) is checked beside the write, before it.
// A refusal is INVALID_ARGUMENT naming the field and its limit.

import type {
  AttachRequest,
  HeartbeatRequest,
  ReportFailedRequest,
  ReportProvisionedRequest,
} from '@gpux/proto';

import {
  MAX_AGENT_VERSION_BYTES,
  MAX_CLUSTER_NODES,
  MAX_ENDPOINT_BYTES,
  MAX_GPU_NAME_BYTES,
  MAX_GPU_UUID_BYTES,
  MAX_GPUS_PER_NODE,
  MAX_HOST_FACT_BYTES,
  MAX_HOST_KEY_BYTES,
  MAX_HOSTNAME_BYTES,
  MAX_KUBECONFIG_BYTES,
  MAX_PROBLEM_BYTES,
  MAX_REASON_BYTES,
} from './agent-limits.js';
import { invalid } from './provider-context.js';

/** `field` holds at most `max` bytes of UTF-8. */
export function checkBytes(value: string, field: string, max: number): void {
  const n = Buffer.byteLength(value);
  if (n > max) throw invalid(`${field} is at most ${max} bytes, got ${n}`);
}

/** `field` has at most `max` entries. */
export function checkCount(
  list: readonly unknown[],
  field: string,
  max: number,
  why?: string,
): void {
  if (list.length > max) {
    throw invalid(
      `${field} has at most ${max} entries${why === undefined ? '' : ` (${why})`}, got ${list.length}`,
    );
  }
}

export function checkAttach(r: AttachRequest): void {
  checkBytes(r.agentVersion, 'agent_version', MAX_AGENT_VERSION_BYTES);
  if (r.host === undefined) return;
  checkBytes(r.host.hostname, 'host.hostname', MAX_HOSTNAME_BYTES);
  checkBytes(r.host.os, 'host.os', MAX_HOST_FACT_BYTES);
  checkBytes(r.host.cpuModel, 'host.cpu_model', MAX_HOST_FACT_BYTES);
}

/** What a heartbeat can be checked for without its cluster (node-health.ts checks the rest). */
export function checkHeartbeat(r: HeartbeatRequest): void {
  checkCount(r.nodes, 'nodes', MAX_CLUSTER_NODES, 'a cluster has at most that many nodes');
  r.nodes.forEach((n, i) => {
    checkBytes(n.hostname, `nodes[${i}].hostname`, MAX_HOSTNAME_BYTES);
    checkBytes(n.problem, `nodes[${i}].problem`, MAX_PROBLEM_BYTES);
    checkCount(n.gpus, `nodes[${i}].gpus`, MAX_GPUS_PER_NODE, 'a node is sold whole, 8 GPUs');
    n.gpus.forEach((g, k) => {
      checkBytes(g.name, `nodes[${i}].gpus[${k}].name`, MAX_GPU_NAME_BYTES);
      checkBytes(g.uuid, `nodes[${i}].gpus[${k}].uuid`, MAX_GPU_UUID_BYTES);
    });
  });
}

/** What a report can be checked for without its lease (provider-leases.ts checks the counts). */
export function checkReportProvisioned(r: ReportProvisionedRequest): void {
  // No lease has more nodes than a cluster: a first bound before the lease is read.
  checkCount(r.sshEndpoints, 'ssh_endpoints', MAX_CLUSTER_NODES, "at most the lease's nodes");
  checkCount(r.sshHostKeys, 'ssh_host_keys', MAX_CLUSTER_NODES, "at most the lease's nodes");
  r.sshEndpoints.forEach((e, i) => {
    checkBytes(e.hostname, `ssh_endpoints[${i}].hostname`, MAX_HOSTNAME_BYTES);
    checkBytes(e.endpoint, `ssh_endpoints[${i}].endpoint`, MAX_ENDPOINT_BYTES);
  });
  r.sshHostKeys.forEach((k, i) => checkBytes(k, `ssh_host_keys[${i}]`, MAX_HOST_KEY_BYTES));
  checkBytes(r.kubeconfig, 'kubeconfig', MAX_KUBECONFIG_BYTES);
}

export function checkReportFailed(r: ReportFailedRequest): void {
  checkBytes(r.reason, 'reason', MAX_REASON_BYTES);
}
