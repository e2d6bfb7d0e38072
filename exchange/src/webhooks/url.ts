// Where a webhook may point (docs/api/webhooks.md, "Endpoint URLs"): https,
// or http to localhost when the exchange runs in development (its embedded
// database, D34); never a host that resolves to a private, loopback,
// link-local (the clouds' metadata service is 169.254.169.254), shared,
// multicast or reserved address, so that a webhook cannot be aimed at the
// exchange's own network. Checked at registration and again before each
// delivery, whose connection then goes to the address that was checked (a
// name that resolves elsewhere a moment later is not followed).

import { lookup } from 'node:dns/promises';
import { BlockList, isIP } from 'node:net';

const BLOCKED = new BlockList();
for (const [net, prefix] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.88.99.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const) {
  BLOCKED.addSubnet(net, prefix, 'ipv4');
}
for (const [net, prefix] of [
  ['::', 128],
  ['::1', 128],
  ['64:ff9b::', 96],
  ['100::', 64],
  ['2001:db8::', 32],
  ['fc00::', 7],
  ['fe80::', 10],
  ['fec0::', 10],
  ['ff00::', 8],
] as const) {
  BLOCKED.addSubnet(net, prefix, 'ipv6');
}

/** A loopback address (allowed in development only). */
function loopback(address: string): boolean {
  const v4 = mappedV4(address);
  if (v4 !== undefined) return v4.startsWith('127.');
  return address === '::1';
}

/** ::ffff:a.b.c.d → a.b.c.d. */
function mappedV4(address: string): string | undefined {
  if (isIP(address) === 4) return address;
  const m = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  return m?.[1];
}

/** Is `address` one a webhook may never reach (development: loopback aside)? */
export function blockedAddress(address: string, allowLoopback: boolean): boolean {
  if (allowLoopback && loopback(address)) return false;
  const v4 = mappedV4(address);
  if (v4 !== undefined) return BLOCKED.check(v4, 'ipv4');
  if (isIP(address) !== 6) return true;
  return BLOCKED.check(address, 'ipv6');
}

const LOCAL_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]']);

/** Why `url` is refused as a webhook's endpoint, or undefined (before resolving its host). */
export function urlProblem(url: string, development: boolean): string | undefined {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return 'url is not an absolute URL';
  }
  if (u.username !== '' || u.password !== '') return 'url may not carry a user name or password';
  if (u.hash !== '') return 'url may not have a #fragment';
  const local = LOCAL_HOSTS.has(u.hostname) || u.hostname.endsWith('.localhost');
  if (u.protocol === 'https:') return undefined;
  if (u.protocol === 'http:' && development && local) return undefined;
  return development
    ? 'url must be https (or http to localhost, in development)'
    : 'url must be https';
}

export interface Resolved {
  readonly address: string;
  readonly family: 4 | 6;
}

/**
 * The address a delivery to `url` connects to: its host resolved, every
 * address it resolves to allowed. Throws an Error saying why not.
 */
export async function resolveAllowed(url: string, development: boolean): Promise<Resolved> {
  const host = new URL(url).hostname.replace(/^\[|\]$/g, '');
  const addresses =
    isIP(host) !== 0
      ? [{ address: host, family: isIP(host) }]
      : await lookup(host, { all: true, verbatim: true }).catch(() => {
          throw new Error(`the host ${host} does not resolve`);
        });
  const bad = addresses.find((a) => blockedAddress(a.address, development));
  if (bad !== undefined) {
    throw new Error(
      `the host ${host} resolves to ${bad.address}, a private, loopback, link-local or reserved address`,
    );
  }
  const [first] = addresses;
  if (first === undefined) throw new Error(`the host ${host} does not resolve`);
  return { address: first.address, family: first.family === 6 ? 6 : 4 };
}
