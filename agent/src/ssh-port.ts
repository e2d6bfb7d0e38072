// The agent's side of the SSH gateway (agent/src/ssh/): the few members the
// agent calls, over any session backend B, so the lease logic does not
// depend on one gateway or backend (a Kubernetes provisioner brings an
// exec-into-pod backend). `SshGateway` fits `SshGatewayPort`, and
// `LeaseDirectory` (lease-directory.ts) fits its `EndpointDirectory` with
// B = LocalWorkspaceBackend (local-ssh.ts connects them).

import type { Logger } from './logger.js';

export interface SshGatewayPort {
  start(): Promise<void>;
  address(): { host: string; port: number };
  /** Refuses the lease's logins from now on, ends its sessions; resolves with the connections closed. */
  revoke(leaseId: string, message: string): Promise<number>;
  close(): Promise<void>;
  /** `publicKey`: `ssh-ed25519 AAAA…`, reported for pinning (D32). */
  readonly hostKey: { readonly publicKey: string; readonly fingerprint: string } | undefined;
}

export type EndpointState = 'ready' | 'starting' | 'unavailable';

/** The gateway's SshEndpoint, over any session backend B. */
export interface SshEndpointOf<B> {
  readonly leaseId: string;
  readonly nodeIndex: number;
  readonly authorizedKeys: readonly string[];
  readonly state: EndpointState;
  readonly message?: string;
  readonly backend: B;
}

export interface EndpointDirectoryOf<B> {
  lookup(username: string): SshEndpointOf<B> | undefined | Promise<SshEndpointOf<B> | undefined>;
}

export interface GatewayFactoryOptions<B> {
  readonly host: string;
  readonly port: number;
  /** Where the gateway keeps its host key. */
  readonly stateDir: string;
  readonly directory: EndpointDirectoryOf<B>;
  readonly logger: Logger;
}

export type GatewayFactory<B> = (o: GatewayFactoryOptions<B>) => Promise<SshGatewayPort>;
