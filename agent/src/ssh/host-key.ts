// The gateway's host key: ed25519, generated once into the agent's state
// directory and reused on every restart, so clients that pinned it (D32:
// the lease read returns the endpoints' host keys) keep trusting it.

import { createHash, randomBytes } from 'node:crypto';
import { chmod, link, mkdir, readFile, stat, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
// ssh2 is CommonJS without named exports Node can detect: import the object.
import ssh2 from 'ssh2';
import type { Logger } from './logger.js';
import { openSshEd25519 } from './openssh-ed25519.js';

export const HOST_KEY_FILE = 'ssh_host_ed25519_key';

export interface HostKey {
  /** The private key in OpenSSH format, as ssh2's Server takes it. */
  readonly privateKey: Buffer;
  /** `ssh-ed25519 AAAA…`: what clients put in known_hosts. */
  readonly publicKey: string;
  /** `SHA256:…` as `ssh-keygen -l` prints it. */
  readonly fingerprint: string;
}

export class HostKeyError extends Error {
  override readonly name = 'HostKeyError';
}

/** `SHA256:` + unpadded base64 of the SHA-256 of the key blob (OpenSSH's format). */
export function fingerprintOf(publicKeyBlob: Buffer): string {
  const digest = createHash('sha256').update(publicKeyBlob).digest('base64');
  return `SHA256:${digest.replace(/=+$/, '')}`;
}

/** Reads an OpenSSH ed25519 private key; anything else is a HostKeyError. */
export function hostKeyFromPrivate(privateKey: Buffer): HostKey {
  const parsed = ssh2.utils.parseKey(privateKey);
  if (parsed instanceof Error) {
    throw new HostKeyError(`host key is not a readable private key: ${parsed.message}`, {
      cause: parsed,
    });
  }
  if (parsed.type !== 'ssh-ed25519' || !parsed.isPrivateKey()) {
    throw new HostKeyError(`host key must be an ed25519 private key, not ${parsed.type}`);
  }
  const blob = parsed.getPublicSSH();
  return {
    privateKey,
    publicKey: `ssh-ed25519 ${blob.toString('base64')}`,
    fingerprint: fingerprintOf(blob),
  };
}

/**
 * The host key kept in `stateDir` (created 0700), generated on first use.
 * The file is written 0600 and published with link(2), so two agents
 * starting at once on one directory end up with the same key and a crash
 * never leaves half a key behind.
 */
export async function loadOrCreateHostKey(stateDir: string, logger?: Logger): Promise<HostKey> {
  await mkdir(stateDir, { recursive: true, mode: 0o700 });
  const path = join(stateDir, HOST_KEY_FILE);
  const existing = await readKeyFile(path, logger);
  if (existing !== undefined) return hostKeyFromPrivate(existing);

  const pair = openSshEd25519('gpux-agent');
  const tmp = `${path}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  await writeFile(tmp, pair.privateKey, { mode: 0o600, flag: 'wx', flush: true });
  try {
    await link(tmp, path);
    logger?.info({ path }, 'ssh host key generated');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  } finally {
    await unlink(tmp);
  }
  const stored = await readKeyFile(path, logger);
  if (stored === undefined) throw new HostKeyError(`host key ${path} vanished after writing`);
  return hostKeyFromPrivate(stored);
}

async function readKeyFile(path: string, logger: Logger | undefined): Promise<Buffer | undefined> {
  let mode: number;
  try {
    mode = (await stat(path)).mode;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
  // A private key others can read is no longer private; sshd refuses one.
  // The state directory is the agent's own, so tighten it rather than stop.
  if ((mode & 0o077) !== 0) {
    logger?.warn(
      { path, mode: (mode & 0o777).toString(8) },
      'ssh host key was readable by others; mode set to 0600',
    );
    await chmod(path, 0o600);
  }
  return readFile(path);
}
