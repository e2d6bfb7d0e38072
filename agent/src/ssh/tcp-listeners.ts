// Which local TCP ports a set of processes listens on, from /proc: the
// listening sockets of /proc/net/tcp{,6} (state 0A) matched by inode against
// the `socket:[inode]` links in /proc/<pid>/fd. This is what lets `ssh -L`
// reach a lease's own server and nothing else on the host.

import { readdir, readFile, readlink } from 'node:fs/promises';
import { endianness } from 'node:os';

import { hasErrno } from './errno.js';

export interface TcpListener {
  /** Network byte order: 4 bytes (IPv4) or 16 (IPv6). */
  readonly address: Buffer;
  readonly port: number;
  readonly inode: number;
}

const LISTEN = '0A';

/**
 * Listening sockets of one /proc/net/tcp or tcp6 table. The kernel prints
 * addresses as 32-bit words in host byte order; `littleEndian` says how to
 * read them back.
 */
export function parseProcNetTcp(text: string, littleEndian: boolean): TcpListener[] {
  const listeners: TcpListener[] = [];
  for (const line of text.split('\n').slice(1)) {
    const fields = line.trim().split(/\s+/);
    const local = fields[1];
    const state = fields[3];
    const inode = Number(fields[9]);
    if (local === undefined || state !== LISTEN || !Number.isInteger(inode)) continue;
    const [hexAddress, hexPort] = local.split(':');
    if (hexAddress === undefined || hexPort === undefined) continue;
    if (hexAddress.length !== 8 && hexAddress.length !== 32) continue;
    const address = Buffer.from(hexAddress, 'hex');
    if (littleEndian) {
      for (let word = 0; word < address.length; word += 4) {
        address.subarray(word, word + 4).reverse();
      }
    }
    listeners.push({ address, port: parseInt(hexPort, 16), inode });
  }
  return listeners;
}

const V4_MAPPED = Buffer.from('00000000000000000000ffff', 'hex');

function ipv4Of(address: Buffer): Buffer | undefined {
  if (address.length === 4) return address;
  if (address.subarray(0, 12).equals(V4_MAPPED)) return address.subarray(12);
  return undefined;
}

/**
 * Where to connect to reach a listener from this host: its loopback
 * address, or undefined when it listens neither on a loopback address nor
 * on all addresses.
 */
export function loopbackAddressOf(listener: TcpListener): string | undefined {
  const v4 = ipv4Of(listener.address);
  if (v4 !== undefined) {
    if (v4.every((b) => b === 0)) return '127.0.0.1';
    return v4[0] === 127 ? v4.join('.') : undefined;
  }
  const allZero = listener.address.every((b) => b === 0);
  const isLoopback =
    listener.address.subarray(0, 15).every((b) => b === 0) && listener.address[15] === 1;
  return allZero || isLoopback ? '::1' : undefined;
}

export async function readTcpListeners(procRoot = '/proc'): Promise<TcpListener[]> {
  const littleEndian = endianness() === 'LE';
  const tables = await Promise.all(
    ['tcp', 'tcp6'].map(async (t) => {
      try {
        return parseProcNetTcp(await readFile(`${procRoot}/net/${t}`, 'latin1'), littleEndian);
      } catch (err) {
        if (hasErrno(err, 'ENOENT')) return []; // no IPv6 on this host
        throw err;
      }
    }),
  );
  return tables.flat();
}

/** Inodes of the sockets the processes hold open (unreadable or vanished ones are skipped). */
export async function socketInodesOf(
  pids: readonly number[],
  procRoot = '/proc',
): Promise<Set<number>> {
  const inodes = new Set<number>();
  await Promise.all(
    pids.map(async (pid) => {
      let fds: string[];
      try {
        fds = await readdir(`${procRoot}/${pid}/fd`);
      } catch (err) {
        // Exited meanwhile, or not ours to read.
        if (hasErrno(err, 'ENOENT', 'ESRCH', 'EACCES')) return;
        throw err;
      }
      await Promise.all(
        fds.map(async (fd) => {
          try {
            const m = /^socket:\[(\d+)\]$/.exec(await readlink(`${procRoot}/${pid}/fd/${fd}`));
            if (m?.[1] !== undefined) inodes.add(Number(m[1]));
          } catch (err) {
            // Closed (or its process exited) meanwhile.
            if (!hasErrno(err, 'ENOENT', 'ESRCH')) throw err;
          }
        }),
      );
    }),
  );
  return inodes;
}
