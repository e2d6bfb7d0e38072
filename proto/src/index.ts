// @gpux/proto: the exchange ↔ agent contract (agent.proto) and the code
// ts-proto generates from it (src/gen/, never edited by hand).

import { fileURLToPath } from 'node:url';

/** Absolute path of the proto/ package, where the .proto files live (from src/ or dist/). */
export const PROTO_DIR: string = fileURLToPath(new URL('..', import.meta.url)).replace(/\/$/, '');

export { AgentServiceClient, AgentServiceService, NodeStatus } from './gen/agent.js';
export type {
  AgentServiceServer,
  AttachRequest,
  AttachResponse,
  EventSource,
  Gpu,
  HeartbeatRequest,
  HeartbeatResponse,
  HostFacts,
  Lease,
  LeaseNode,
  ListLeasesRequest,
  ListLeasesResponse,
  ListSellsRequest,
  ListSellsResponse,
  Node,
  NodeHealth,
  PublishSellRequest,
  PublishSellResponse,
  Refusal,
  ReportFailedRequest,
  ReportProvisionedRequest,
  ReportResponse,
  ReportRevokedRequest,
  SellOrder,
  SshEndpoint,
  WithdrawSellRequest,
  WithdrawSellResponse,
} from './gen/agent.js';
export { GRPC_STATUS_OF_ERROR, RETRY_AFTER_MS, grpcStatusOf } from './error-status.js';
