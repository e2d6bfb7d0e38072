// The maximum of every string and repeated field an agent sends (issue 18):
// what an agent sends is input from the internet, so every byte of it is
// bounded before anything is written. The checks (agent-input.ts and the
// cluster- and lease-bound checks beside the writes), the gRPC server's
// message size, the comments in proto/agent.proto and the table in
// docs/providers.md all come from here; agent-limits.test.ts holds them
// to it. Sizes are UTF-8 bytes.

import { GPUS_PER_NODE } from '@gpux/shared';

/** D31: a cluster registered through the admin API has at most this many nodes. */
export const MAX_CLUSTER_NODES = 1_000;

/** Ids the exchange made (cls_…, lse_…, ord_…): `xxx_` and at most 60 letters or digits. */
export const MAX_ID_BYTES = 64;
/** A DNS name (RFC 1035) and a Kubernetes Node name: 253. */
export const MAX_HOSTNAME_BYTES = 253;
export const MAX_AGENT_VERSION_BYTES = 128;
/** HostFacts.os and HostFacts.cpu_model. */
export const MAX_HOST_FACT_BYTES = 256;
export const MAX_GPU_NAME_BYTES = 256;
/**
 * nvidia-smi's `GPU-<uuid>` is 40; the Kubernetes provisioner sends
 * `<node name>/nvidia.com/gpu/<index>`, up to 253 + 16 + a few digits.
 */
export const MAX_GPU_UUID_BYTES = 300;
/** D31: every node is one machine of 8 GPUs. */
export const MAX_GPUS_PER_NODE = GPUS_PER_NODE;
/** NodeHealth.problem: a line for operators. */
export const MAX_PROBLEM_BYTES = 512;
/** ReportFailedRequest.reason: a line for operators and the buyer. */
export const MAX_REASON_BYTES = 1_024;
/** `<ssh_user>@<host>:<port>`: a user of 1-64, a host of 1-253, a port of 1-5 digits. */
export const MAX_ENDPOINT_BYTES = 64 + 1 + MAX_HOSTNAME_BYTES + 1 + 5;
/** An OpenSSH public key line: ssh-rsa of 16,384 bits is ~2.8 KB of base64. */
export const MAX_HOST_KEY_BYTES = 4_096;
/** D28: the lease's kubeconfig, sealed and served to the buyer. */
export const MAX_KUBECONFIG_BYTES = 64 * 1024;

/**
 * The gRPC server refuses a message larger than this with RESOURCE_EXHAUSTED
 * (grpc.max_receive_message_length). The largest valid message is a
 * Heartbeat of a cluster of MAX_CLUSTER_NODES nodes with every field at its
 * maximum (about 5.6 MB); agent-limits.test.ts encodes it and holds this
 * just above it.
 */
export const MAX_MESSAGE_BYTES = 6 * 1024 * 1024;

/**
 * One row of the table in docs/providers.md, and the comment `// Limit: <limit>.`
 * right above the field in agent.proto.
 */
export interface FieldLimit {
  /** The request message of agent.proto. */
  readonly message: string;
  /** The field, as agent.proto names it. */
  readonly field: string;
  /** The limit as the docs and the .proto comment state it. */
  readonly limit: string;
}

const bytes = (n: number): string => `${n.toLocaleString('en-US')} bytes`;
const ID = `${bytes(MAX_ID_BYTES)} (an id)`;

/** Every string and repeated field of the requests (and PublishSell's count), and its maximum. */
export const FIELD_LIMITS: readonly FieldLimit[] = [
  { message: 'AttachRequest', field: 'cluster_id', limit: ID },
  { message: 'AttachRequest', field: 'agent_version', limit: bytes(MAX_AGENT_VERSION_BYTES) },
  { message: 'AttachRequest', field: 'provisioner', limit: '"simulated" or "kubernetes"' },
  { message: 'HostFacts', field: 'hostname', limit: bytes(MAX_HOSTNAME_BYTES) },
  { message: 'HostFacts', field: 'os', limit: bytes(MAX_HOST_FACT_BYTES) },
  { message: 'HostFacts', field: 'cpu_model', limit: bytes(MAX_HOST_FACT_BYTES) },
  { message: 'HeartbeatRequest', field: 'cluster_id', limit: ID },
  {
    message: 'HeartbeatRequest',
    field: 'nodes',
    limit: `the cluster's nodes (at most ${MAX_CLUSTER_NODES.toLocaleString('en-US')}), each hostname once`,
  },
  {
    message: 'NodeHealth',
    field: 'hostname',
    limit: `${bytes(MAX_HOSTNAME_BYTES)}, a hostname of the cluster`,
  },
  { message: 'NodeHealth', field: 'problem', limit: bytes(MAX_PROBLEM_BYTES) },
  {
    message: 'NodeHealth',
    field: 'gpus',
    limit: `${MAX_GPUS_PER_NODE} (a node is sold whole, 8 GPUs)`,
  },
  { message: 'Gpu', field: 'name', limit: bytes(MAX_GPU_NAME_BYTES) },
  { message: 'Gpu', field: 'uuid', limit: bytes(MAX_GPU_UUID_BYTES) },
  { message: 'ListSellsRequest', field: 'cluster_id', limit: ID },
  { message: 'PublishSellRequest', field: 'cluster_id', limit: ID },
  { message: 'PublishSellRequest', field: 'nodes', limit: "1 to the cluster's nodes" },
  { message: 'WithdrawSellRequest', field: 'cluster_id', limit: ID },
  { message: 'WithdrawSellRequest', field: 'order_id', limit: ID },
  { message: 'ListLeasesRequest', field: 'cluster_id', limit: ID },
  { message: 'ReportProvisionedRequest', field: 'cluster_id', limit: ID },
  { message: 'ReportProvisionedRequest', field: 'lease_id', limit: ID },
  { message: 'ReportProvisionedRequest', field: 'ssh_endpoints', limit: "the lease's nodes" },
  {
    message: 'ReportProvisionedRequest',
    field: 'ssh_host_keys',
    limit: `the lease's nodes; each ${bytes(MAX_HOST_KEY_BYTES)}`,
  },
  { message: 'ReportProvisionedRequest', field: 'kubeconfig', limit: bytes(MAX_KUBECONFIG_BYTES) },
  { message: 'SshEndpoint', field: 'hostname', limit: bytes(MAX_HOSTNAME_BYTES) },
  { message: 'SshEndpoint', field: 'endpoint', limit: bytes(MAX_ENDPOINT_BYTES) },
  { message: 'ReportRevokedRequest', field: 'cluster_id', limit: ID },
  { message: 'ReportRevokedRequest', field: 'lease_id', limit: ID },
  { message: 'ReportFailedRequest', field: 'cluster_id', limit: ID },
  { message: 'ReportFailedRequest', field: 'lease_id', limit: ID },
  { message: 'ReportFailedRequest', field: 'reason', limit: bytes(MAX_REASON_BYTES) },
];
