// The largest valid request of each kind (agent-limits.ts): every string at
// its limit, every repeated field at its count, every integer at its longest
// encoding. The message size test encodes them; the bounds test registers a
// cluster with these hostnames and sends the heartbeat.

import type {
  AttachRequest,
  Gpu,
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
  MAX_ID_BYTES,
  MAX_KUBECONFIG_BYTES,
  MAX_PROBLEM_BYTES,
  MAX_REASON_BYTES,
} from '../agent-limits.js';

/** An id of the longest form the exchange takes (`cls_` and 60 characters). */
export const longestId = (prefix: string): string =>
  `${prefix}_${'0'.repeat(MAX_ID_BYTES - prefix.length - 1)}`;

/**
 * `count` distinct RFC 1123 hostnames of exactly MAX_HOSTNAME_BYTES: four
 * labels (63 + 63 + 63 + 61 and three dots), the first numbered.
 */
export function longestHostnames(count: number, tag = 'n'): string[] {
  const rest = `.${'b'.repeat(63)}.${'c'.repeat(63)}.${'d'.repeat(61)}`;
  return Array.from({ length: count }, (_, i) => {
    const head = `${tag}${i}-`;
    const name = `${head}${'a'.repeat(63 - head.length)}${rest}`;
    if (name.length !== MAX_HOSTNAME_BYTES) throw new Error('the hostname is not the longest');
    return name;
  });
}

const UINT32_MAX = 2 ** 32 - 1;

function largestGpu(): Gpu {
  return {
    index: UINT32_MAX,
    name: 'N'.repeat(MAX_GPU_NAME_BYTES),
    uuid: 'U'.repeat(MAX_GPU_UUID_BYTES),
    memoryTotalMib: UINT32_MAX,
    utilizationPercent: UINT32_MAX,
    // A negative int32 is ten bytes on the wire.
    temperatureC: -1,
  };
}

export function largestHeartbeat(
  clusterId: string,
  hostnames: readonly string[] = longestHostnames(MAX_CLUSTER_NODES),
): HeartbeatRequest {
  return {
    clusterId,
    nodes: hostnames.map((hostname) => ({
      hostname,
      healthy: true,
      problem: 'p'.repeat(MAX_PROBLEM_BYTES),
      gpus: Array.from({ length: MAX_GPUS_PER_NODE }, largestGpu),
    })),
  };
}

export function largestAttach(clusterId: string): AttachRequest {
  return {
    clusterId,
    heartbeatIntervalSeconds: 300,
    agentVersion: 'v'.repeat(MAX_AGENT_VERSION_BYTES),
    provisioner: 'kubernetes',
    host: {
      hostname: longestHostnames(1, 'agent')[0] ?? '',
      os: 'o'.repeat(MAX_HOST_FACT_BYTES),
      cpuModel: 'c'.repeat(MAX_HOST_FACT_BYTES),
      cpuCores: UINT32_MAX,
      memoryMib: UINT32_MAX,
    },
  };
}

/** An OpenSSH public key line of exactly MAX_HOST_KEY_BYTES. */
export function longestHostKey(): string {
  const head = `ssh-rsa ${'A'.repeat(4000)} `;
  return `${head}${'c'.repeat(MAX_HOST_KEY_BYTES - head.length)}`;
}

/** `<64-character user>@<253-character host>:65535`. */
export function longestEndpoint(host = longestHostnames(1, 'ssh')[0] ?? ''): string {
  const endpoint = `${'u'.repeat(64)}@${host}:65535`;
  if (endpoint.length !== MAX_ENDPOINT_BYTES) throw new Error('the endpoint is not the longest');
  return endpoint;
}

export function largestReportProvisioned(
  clusterId: string,
  leaseId: string,
  hostnames: readonly string[] = longestHostnames(MAX_CLUSTER_NODES),
): ReportProvisionedRequest {
  return {
    clusterId,
    leaseId,
    sshEndpoints: hostnames.map((hostname) => ({ hostname, endpoint: longestEndpoint() })),
    sshHostKeys: hostnames.map(longestHostKey),
    kubeconfig: 'k'.repeat(MAX_KUBECONFIG_BYTES),
  };
}

export function largestReportFailed(clusterId: string, leaseId: string): ReportFailedRequest {
  return { clusterId, leaseId, reason: 'r'.repeat(MAX_REASON_BYTES) };
}
