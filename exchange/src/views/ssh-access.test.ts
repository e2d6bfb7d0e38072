import { describe, expect, it } from 'vitest';

import { knownHostsName, parseEndpoint, sshAccessOf } from './ssh-access.js';

const KEY = 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl';

describe('ssh_access (issue 24: each endpoint with its host keys and known_hosts lines)', () => {
  it('parses <user>@<host>:<port>, bracketed IPv6 included, and refuses what is not one', () => {
    expect(parseEndpoint('u1@gpu-a.example:2222')).toEqual({
      user: 'u1',
      host: 'gpu-a.example',
      port: 2222,
    });
    expect(parseEndpoint('u1@[2001:db8::1]:22')).toEqual({
      user: 'u1',
      host: '2001:db8::1',
      port: 22,
    });
    for (const bad of [
      'gpu-a:22',
      'u@host',
      'u@host:0',
      'u@host:70000',
      'u@ho st:22',
      'u@[a:22',
      'u@:22',
      '',
    ]) {
      expect(parseEndpoint(bad)).toBeUndefined();
    }
  });

  it('names the host as OpenSSH does: plain on port 22, [host]:port otherwise', () => {
    expect(knownHostsName('10.0.0.5', 22)).toBe('10.0.0.5');
    expect(knownHostsName('10.0.0.5', 2222)).toBe('[10.0.0.5]:2222');
    expect(knownHostsName('2001:db8::1', 2222)).toBe('[2001:db8::1]:2222');
  });

  it('pairs every endpoint with each reported key once, comments dropped', () => {
    const a = sshAccessOf('node-1', 'lease@10.0.0.5:2222', [`${KEY} gpux-agent`, KEY]);
    expect(a).toEqual({
      hostname: 'node-1',
      endpoint: 'lease@10.0.0.5:2222',
      user: 'lease',
      host: '10.0.0.5',
      port: 2222,
      host_keys: [KEY],
      known_hosts: [`[10.0.0.5]:2222 ${KEY}`],
    });
    expect(sshAccessOf('node-1', 'not an endpoint', [KEY])).toBeUndefined();
  });
});
