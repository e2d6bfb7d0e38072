// Where a webhook may point (url.ts, docs/api/webhooks.md "Endpoint URLs").

import { describe, expect, it } from 'vitest';

import { blockedAddress, resolveAllowed, urlProblem } from './url.js';

describe('webhook URLs', () => {
  it('refuses private, loopback, link-local, shared, multicast and reserved addresses', () => {
    for (const a of [
      '10.0.0.1',
      '172.16.5.4',
      '192.168.1.1',
      '127.0.0.1',
      '169.254.169.254',
      '100.64.0.1',
      '0.0.0.0',
      '224.0.0.1',
      '::1',
      '::',
      'fd00:ec2::254',
      'fe80::1',
      '::ffff:10.0.0.1',
      '::ffff:127.0.0.1',
      'not-an-address',
    ]) {
      expect(blockedAddress(a, false), a).toBe(true);
    }
    for (const a of ['93.184.215.14', '2606:2800:21f:cb07:6820:80da:af6b:8b2c', '8.8.8.8']) {
      expect(blockedAddress(a, false), a).toBe(false);
    }
  });

  it('allows loopback, and only loopback, in development', () => {
    expect(blockedAddress('127.0.0.1', true)).toBe(false);
    expect(blockedAddress('::1', true)).toBe(false);
    expect(blockedAddress('10.0.0.1', true)).toBe(true);
    expect(blockedAddress('169.254.169.254', true)).toBe(true);
  });

  it('wants https; http only to localhost, in development', () => {
    expect(urlProblem('https://hooks.example.com/x', false)).toBeUndefined();
    expect(urlProblem('http://hooks.example.com/x', false)).toBe('url must be https');
    expect(urlProblem('http://localhost:3000/x', false)).toBe('url must be https');
    expect(urlProblem('http://localhost:3000/x', true)).toBeUndefined();
    expect(urlProblem('http://127.0.0.1:3000/x', true)).toBeUndefined();
    expect(urlProblem('http://hooks.example.com/x', true)).toMatch(/localhost/);
    expect(urlProblem('https://u:p@hooks.example.com/x', false)).toMatch(/password/);
    expect(urlProblem('nope', false)).toMatch(/absolute/);
  });

  it('resolves the host and checks every address: localhost is refused outside development', async () => {
    await expect(resolveAllowed('https://127.0.0.1/x', false)).rejects.toThrow(/loopback/);
    await expect(resolveAllowed('https://localhost/x', false)).rejects.toThrow(/resolves to/);
    await expect(resolveAllowed('http://127.0.0.1:9/x', true)).resolves.toEqual({
      address: '127.0.0.1',
      family: 4,
    });
  });
});
