// The gateway's options → defaults → compiled config, every bad value
// reported at once.

import type { HostKey } from './host-key.js';
import type { Logger } from './logger.js';
import type { EndpointDirectory } from './types.js';

export interface SshGatewayLimits {
  /** Open TCP connections, authenticated or not; more are dropped at once. */
  readonly maxConnections: number;
  /** Open channels (sessions and forwards) per connection; more are refused. */
  readonly maxChannelsPerConnection: number;
  /** A connection not authenticated by then is closed. */
  readonly authTimeoutMs: number;
  /** Refused authentication requests per connection before it is closed. */
  readonly maxAuthFailures: number;
  /** On revocation, how long channels get to close before the connection is ended anyway. */
  readonly revokeCloseFallbackMs: number;
}

export const DEFAULT_LIMITS: SshGatewayLimits = {
  maxConnections: 256,
  maxChannelsPerConnection: 32,
  authTimeoutMs: 30_000,
  maxAuthFailures: 10,
  revokeCloseFallbackMs: 250,
};

export interface SshGatewayOptions {
  /** Address to listen on. Default 0.0.0.0. */
  readonly host?: string;
  /** Port to listen on; 0 picks a free one (see `address()`). */
  readonly port: number;
  readonly hostKey: HostKey;
  readonly directory: EndpointDirectory;
  readonly logger: Logger;
  readonly limits?: Partial<SshGatewayLimits>;
  /**
   * Who serves the SFTP subsystem: 'gateway' (default), the gateway's own
   * server on the backend's `sftpRoot`; 'backend', a process the backend
   * runs (`sftpCommand`), as sshd runs sftp-server.
   */
  readonly sftp?: SftpMode;
}

export type SftpMode = 'gateway' | 'backend';

export interface SshGatewayConfig {
  readonly host: string;
  readonly port: number;
  readonly hostKey: HostKey;
  readonly directory: EndpointDirectory;
  readonly logger: Logger;
  readonly limits: SshGatewayLimits;
  readonly sftp: SftpMode;
}

export class SshGatewayConfigError extends Error {
  override readonly name = 'SshGatewayConfigError';
  constructor(readonly problems: readonly string[]) {
    super(`invalid SSH gateway options: ${problems.join('; ')}`);
  }
}

export function compileGatewayConfig(options: SshGatewayOptions): SshGatewayConfig {
  const limits: SshGatewayLimits = { ...DEFAULT_LIMITS, ...options.limits };
  const problems: string[] = [];
  if (!Number.isInteger(options.port) || options.port < 0 || options.port > 65_535) {
    problems.push(`port must be an integer 0..65535, got ${options.port}`);
  }
  for (const [name, value] of Object.entries(limits) as [keyof SshGatewayLimits, number][]) {
    if (!Number.isInteger(value) || value < 1) {
      problems.push(`limits.${name} must be a positive integer, got ${value}`);
    }
  }
  if (problems.length > 0) throw new SshGatewayConfigError(problems);
  return {
    host: options.host ?? '0.0.0.0',
    port: options.port,
    hostKey: options.hostKey,
    directory: options.directory,
    logger: options.logger,
    limits,
    sftp: options.sftp ?? 'gateway',
  };
}
