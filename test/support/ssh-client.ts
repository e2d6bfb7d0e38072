// The real OpenSSH client against a lease's endpoint, pinned to the host key
// the lease read reports (D32): keys made with ssh-keygen, a known_hosts of
// the reported keys, and `ssh -F /dev/null` so nothing of the user's own
// configuration or agent takes part.

import { execFileSync, spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export interface SshKey {
  /** The private key file, for `ssh -i`. */
  readonly file: string;
  /** The OpenSSH public key line, for POST /v1/ssh_keys. */
  readonly publicKey: string;
}

/** A new ed25519 key pair without a passphrase under `dir`. */
export function makeSshKey(dir: string, name: string): SshKey {
  const file = join(dir, name);
  execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', name, '-f', file]);
  return { file, publicKey: readFileSync(`${file}.pub`, 'utf8').trim() };
}

export interface SshEndpoint {
  readonly user: string;
  readonly host: string;
  readonly port: number;
}

/** `<user>@<host>:<port>` as the lease read's `ssh_endpoints` gives it. */
export function parseEndpoint(endpoint: string): SshEndpoint {
  const m = /^([^@]+)@(.+):(\d+)$/.exec(endpoint);
  if (m === null) throw new Error(`not an SSH endpoint: ${endpoint}`);
  const [, user = '', host = '', port = '0'] = m;
  return { user, host: host.replace(/^\[(.*)\]$/, '$1'), port: Number(port) };
}

/** A known_hosts file at `file` that trusts exactly `hostKeys` for the endpoint's host and port. */
export function writeKnownHosts(
  file: string,
  endpoint: SshEndpoint,
  hostKeys: readonly string[],
): string {
  const name = endpoint.port === 22 ? endpoint.host : `[${endpoint.host}]:${endpoint.port}`;
  writeFileSync(file, hostKeys.map((k) => `${name} ${k}\n`).join(''));
  return file;
}

/**
 * `ssh` arguments up to (not including) the destination: no config, pinned
 * host key, this key only (`key` or its private key file). OpenSSH takes the
 * first value of an option, so LogLevel is a parameter.
 */
export function sshOptions(
  key: SshKey | string,
  knownHosts: string,
  port: number,
  logLevel = 'ERROR',
): string[] {
  return [
    '-F',
    '/dev/null',
    '-i',
    typeof key === 'string' ? key : key.file,
    '-p',
    String(port),
    '-o',
    'StrictHostKeyChecking=yes',
    '-o',
    `UserKnownHostsFile=${knownHosts}`,
    '-o',
    'IdentitiesOnly=yes',
    '-o',
    'IdentityAgent=none',
    '-o',
    'BatchMode=yes',
    '-o',
    `LogLevel=${logLevel}`,
    '-o',
    'ConnectTimeout=10',
  ];
}

export interface SshTarget {
  readonly endpoint: SshEndpoint;
  readonly key: SshKey;
  readonly knownHosts: string;
}

/** The lease read's first endpoint with `key`, pinned to the lease's reported host keys in `knownHostsFile`. */
export function leaseTarget(
  lease: Record<string, unknown>,
  key: SshKey,
  knownHostsFile: string,
): SshTarget {
  const endpoint = parseEndpoint((lease['ssh_endpoints'] as string[])[0] ?? '');
  const knownHosts = writeKnownHosts(knownHostsFile, endpoint, lease['ssh_host_keys'] as string[]);
  return { endpoint, key, knownHosts };
}

/** Starts `ssh … user@host command` (extra options before the destination). */
export function spawnSsh(target: SshTarget, command: string, extra: string[] = []): ChildProcess {
  const { endpoint, key, knownHosts } = target;
  return spawn(
    'ssh',
    [
      ...sshOptions(key, knownHosts, endpoint.port),
      ...extra,
      `${endpoint.user}@${endpoint.host}`,
      command,
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
}

export interface SshResult {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Collects a started ssh's output until it exits. */
export async function finished(child: ChildProcess): Promise<SshResult> {
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (b: Buffer) => (stdout += b.toString()));
  child.stderr?.on('data', (b: Buffer) => (stderr += b.toString()));
  const [code] = (await once(child, 'exit')) as [number | null];
  return { code, stdout, stderr };
}

/** Runs one command over ssh to the end. */
export function runSsh(
  target: SshTarget,
  command: string,
  extra: string[] = [],
): Promise<SshResult> {
  return finished(spawnSsh(target, command, extra));
}

/**
 * An ssh running `command` that printed `marker` on stdout (a session known
 * to be open); `extra` options, e.g. ['-tt'] for a pty.
 */
export async function openSession(
  target: SshTarget,
  marker = 'session-open',
  command = `echo ${marker}; exec sleep 600`,
  extra: string[] = [],
): Promise<{ child: ChildProcess; ended: Promise<SshResult> }> {
  const child = spawnSsh(target, command, extra);
  const ended = finished(child);
  await new Promise<void>((resolve, reject) => {
    let seen = '';
    child.stdout?.on('data', (b: Buffer) => {
      seen += b.toString();
      if (seen.includes(marker)) resolve();
    });
    void ended.then((r) =>
      reject(new Error(`ssh exited (${String(r.code)}) before ${marker}: ${r.stderr}`)),
    );
  });
  return { child, ended };
}
