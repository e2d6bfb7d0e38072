// The pieces of gpux ssh and ssh-config: which node, the Host entries,
// the Include line added once and at the top.

import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { describe, expect, it } from 'vitest';

import type { Schemas } from './api.js';
import { accessOf, addInclude, hostEntries } from './ssh-commands.js';

type Lease = Schemas['LeaseDetail'];

const access = (hostname: string, port: number): Schemas['SshAccess'] => ({
  hostname,
  endpoint: `lse-1@127.0.0.1:${port}`,
  user: 'lse-1',
  host: '127.0.0.1',
  port,
  host_keys: ['ssh-ed25519 AAAA'],
  known_hosts: [`[127.0.0.1]:${port} ssh-ed25519 AAAA`],
});

const lease = {
  lease_id: 'lse_1',
  instance_type: '16xh100',
  zone: 'us-west-1',
  state: 'active',
  end_time: '2026-11-27T04:00:00Z',
  ssh_access: [access('gpu-a', 2222), access('gpu-b', 2223)],
} as unknown as Lease;

describe('accessOf', () => {
  it('the first node by default, else by number or host name', () => {
    expect(accessOf(lease, undefined).hostname).toBe('gpu-a');
    expect(accessOf(lease, '2').hostname).toBe('gpu-b');
    expect(accessOf(lease, 'gpu-b').port).toBe(2223);
    expect(() => accessOf(lease, '3')).toThrow(/has nodes 1 \(gpu-a\), 2 \(gpu-b\)/);
  });
  it('a lease without access says what state it is in', () => {
    expect(() => accessOf({ ...lease, state: 'provisioning', ssh_access: [] }, undefined)).toThrow(
      /is provisioning: it has no SSH access yet/,
    );
  });
});

describe('hostEntries', () => {
  it('one Host a node, the first also named by the lease alone, pinned to the known_hosts file', () => {
    const text = hostEntries([lease], '/home/u/.ssh/gpux/known hosts', '/k/id');
    expect(text).toContain('Host lse_1 lse_1-1\n');
    expect(text).toContain('Host lse_1-2\n');
    expect(text).toContain('  Port 2223\n');
    expect(text).toContain('  UserKnownHostsFile "/home/u/.ssh/gpux/known hosts"\n');
    expect(text).toContain(
      '  StrictHostKeyChecking yes\n  IdentityFile /k/id\n  IdentitiesOnly yes',
    );
  });
});

describe('addInclude', () => {
  it('adds the line at the top once', () => {
    const dir = mkdtempSync(join(tmpdir(), 'gpux-include-'));
    try {
      const path = join(dir, 'config');
      writeFileSync(path, 'Host work\n  User me\n');
      expect(addInclude(path, 'Include /x')).toBe(true);
      expect(addInclude(path, 'Include /x')).toBe(false);
      expect(readFileSync(path, 'utf8')).toBe('Include /x\n\nHost work\n  User me\n');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
