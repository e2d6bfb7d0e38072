// The SSH side of the simulated provisioner: the gateway of agent/src/ssh
// with its host key in the state directory, and sessions run by
// LocalWorkspaceBackend in each leased node's workspace directory (as the
// agent's own user: for demos and tests, see config.ts's loopback rule).

import { join } from 'node:path';

import type { AgentSsh } from './assemble.js';
import type { GatewayFactoryOptions } from './ssh-port.js';
import type { SftpMode } from './ssh/gateway-config.js';
import { LocalWorkspaceBackend, SshGateway, loadOrCreateHostKey } from './ssh/index.js';
import type { SessionBackend } from './ssh/types.js';

/**
 * The agent's SSH gateway, its host key kept in the state directory (D32);
 * any backend. `sftp`: who serves SFTP (gateway-config.ts).
 */
export const sshGatewayFactory = async <B extends SessionBackend>(
  o: GatewayFactoryOptions<B>,
  sftp: SftpMode = 'gateway',
): Promise<SshGateway> =>
  new SshGateway({
    host: o.host,
    port: o.port,
    hostKey: await loadOrCreateHostKey(o.stateDir, o.logger),
    directory: o.directory,
    logger: o.logger,
    sftp,
  });

export function localWorkspaceSsh(stateDir: string): AgentSsh<LocalWorkspaceBackend> {
  return {
    gatewayFactory: sshGatewayFactory,
    backendFactory: (dir, env) => new LocalWorkspaceBackend(dir, env),
    // Answers logins of leases still provisioning or ended; the gateway runs no session on it.
    idleBackend: new LocalWorkspaceBackend(join(stateDir, 'ssh', 'no-workspace'), {}),
  };
}
