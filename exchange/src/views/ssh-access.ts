// Issue 24: the lease read pairs each SSH endpoint with the host keys that
// may answer on it and ready `known_hosts` lines, so a client pins the first
// connection without building lines itself. An agent serves all of a lease's
// endpoints from its SSH gateway (agent/src/ssh/gateway.ts), and reports the
// gateway's host keys for the lease (D32): every endpoint of the lease is
// paired with all of them.

export interface SshAccess {
  hostname: string;
  endpoint: string;
  user: string;
  host: string;
  port: number;
  host_keys: string[];
  known_hosts: string[];
}

/**
 * `<user>@<host>:<port>`, the port after the last colon (the agent's form,
 * exchange/src/providers/provider-leases.ts, lets an IPv6 host go bare or in
 * brackets); undefined when malformed.
 */
export function parseEndpoint(
  endpoint: string,
): { user: string; host: string; port: number } | undefined {
  const m = /^([^@\s]+)@([^@\s]+):(\d{1,5})$/.exec(endpoint);
  if (m === null) return undefined;
  const [, user = '', rawHost = '', rawPort = ''] = m;
  const port = Number(rawPort);
  if (port < 1 || port > 65535) return undefined;
  const host = /^\[[^[\]]+\]$/.test(rawHost) ? rawHost.slice(1, -1) : rawHost;
  if (host === '' || /[[\]]/.test(host)) return undefined;
  return { user, host, port };
}

/** How OpenSSH names a host in known_hosts: `host` on port 22, `[host]:port` otherwise. */
export function knownHostsName(host: string, port: number): string {
  return port === 22 ? host : `[${host}]:${port}`;
}

/** `<type> <base64>` of an OpenSSH public key line (its comment dropped); undefined when not one. */
export function keyOfLine(line: string): string | undefined {
  const [type, blob] = line.trim().split(/\s+/);
  if (type === undefined || blob === undefined || !/^[A-Za-z0-9+/=]+$/.test(blob)) return undefined;
  return `${type} ${blob}`;
}

export function sshAccessOf(
  hostname: string,
  endpoint: string,
  hostKeys: readonly string[],
): SshAccess | undefined {
  const e = parseEndpoint(endpoint);
  if (e === undefined) return undefined;
  const keys = [...new Set(hostKeys.flatMap((k) => keyOfLine(k) ?? []))];
  const name = knownHostsName(e.host, e.port);
  return {
    hostname,
    endpoint,
    ...e,
    host_keys: keys,
    known_hosts: keys.map((k) => `${name} ${k}`),
  };
}
