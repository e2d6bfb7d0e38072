// The agent's side of the SSH gateway (agent/src/ssh/): the few members the
// lease worker calls, so the lease logic can be tested without a gateway.
// `SshGateway` fits it.

export interface SshGatewayPort {
  address(): { host: string; port: number };
  /** Refuses the lease's logins from now on, ends its sessions; resolves with the connections closed. */
  revoke(leaseId: string, message: string): Promise<number>;
  /** `publicKey`: `ssh-ed25519 AAAA…`, reported for pinning (D32). */
  readonly hostKey: { readonly publicKey: string; readonly fingerprint: string } | undefined;
}
