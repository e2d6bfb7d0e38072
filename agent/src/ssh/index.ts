// The agent's SSH gateway: a buyer of a lease gets a shell on its nodes
// within seconds and loses it within seconds of termination (D26, D32).
// This file is the module's one public entry.
//
// ── Using it ──────────────────────────────────────────────────────────────
//
//   const hostKey = await loadOrCreateHostKey(stateDir, logger);
//   // report hostKey.publicKey / hostKey.fingerprint for pinning (D32)
//   const gateway = new SshGateway({ host, port, hostKey, directory, logger, limits });
//   await gateway.start();                  // gateway.address() → { host, port }
//   …
//   const closed = await gateway.revoke(leaseId, 'gpux: lease terminated');
//   await gateway.close();
//
// ── What the agent provides ───────────────────────────────────────────────
//
// EndpointDirectory.lookup(username) → SshEndpoint | undefined (may be async)
//   Asked at every authentication attempt and again at every session or
//   forward request. undefined: the login fails.
// SshEndpoint { leaseId, nodeIndex, authorizedKeys, state, message?, backend }
//   authorizedKeys: OpenSSH public key lines, exactly the keys the lease's
//     account had at provisioning (D32); ssh-ed25519 and ssh-rsa ≥ 2048 bits.
//   state 'ready': sessions run on `backend`.
//   state 'starting' | 'unavailable': the login succeeds, but every shell,
//     command or sftp session prints `message` on stderr and exits at once
//     with 75 (EX_TEMPFAIL) or 69 (EX_UNAVAILABLE); forwards are refused.
// SessionBackend (per endpoint)
//   shell({ term, cols, rows, env, command? }) → Promise<ShellHandle>
//     a process on a pseudo-terminal: write, onData, resize, pause/resume,
//     onExit, hangup (client left: SIGHUP), kill (every process of the
//     session, process groups included; resolves when they are gone).
//   exec({ env, command? }) → Promise<ExecHandle>
//     a process on pipes: stdin, stdout, stderr, onExit (after the output
//     ended), hangup (client left: pipes closed), kill (as above).
//     command undefined: a login shell reading stdin (`ssh -T host`).
//   sftpRoot: string | undefined — the directory SFTP is confined to.
//   forward(host, port) → Promise<{ ok: true, socket } | { ok: false, reason }>
//   env holds only TERM, LANG and LC_* from the client.
// LocalWorkspaceBackend(dir, env, { shell?, killGraceMs? }) is the simulated
//   provisioner's backend (processes of this host's agent user, cwd and HOME
//   = dir, forwards only to ports the lease's own processes listen on);
//   its terminate() ends what sessions left running, for the provisioner to
//   call when it revokes the lease.
//
// ── What the gateway guarantees ───────────────────────────────────────────
//
// • Host key: ed25519, kept 0600 in the state directory, reused on restart.
// • Public-key authentication only; a wrong key, unknown user or revoked
//   lease gets `Permission denied (publickey)`.
// • revoke(leaseId, message): new logins of the lease are refused at once
//   (for the life of the gateway); every open channel of the lease gets the
//   message on stderr, exit status 255, and its processes killed (SIGHUP,
//   SIGKILL after the backend's grace); each connection is ended once its
//   channels closed (or after limits.revokeCloseFallbackMs). Resolves when
//   all of it is done, with the number of the lease's connections closed.
//   Processes left by sessions that already ended are the backend's to end
//   (LocalWorkspaceBackend.terminate(); a Kubernetes backend deletes pods).
// • Limits (SshGatewayLimits): connections, channels per connection, login
//   timeout, failed logins per connection. Logs go to the injected logger.

export { SshGateway, SHUTDOWN_MESSAGE } from './gateway.js';
export { DEFAULT_LIMITS, SshGatewayConfigError } from './gateway-config.js';
export type { SshGatewayLimits, SshGatewayOptions } from './gateway-config.js';
export { HostKeyError, fingerprintOf, loadOrCreateHostKey, HOST_KEY_FILE } from './host-key.js';
export type { HostKey } from './host-key.js';
export { LocalWorkspaceBackend } from './local-workspace-backend.js';
export type { LocalWorkspaceBackendOptions } from './local-workspace-backend.js';
export { EXIT_REVOKED, EXIT_STARTING, EXIT_UNAVAILABLE } from './session-channel.js';
export { SILENT_LOGGER } from './logger.js';
export type { LogFn, Logger } from './logger.js';
export type {
  EndpointDirectory,
  EndpointState,
  ExecHandle,
  ExecOptions,
  ForwardResult,
  SessionBackend,
  SessionEnv,
  SessionExit,
  ShellHandle,
  ShellOptions,
  SshEndpoint,
} from './types.js';
