import { describe, expect, it } from 'vitest';

import { describeNats, natsConnectionOptions, natsServerOf } from './nats-connection.js';

const SEED = new TextEncoder().encode(`SU${'A'.repeat(56)}`);

describe('the NATS connection of both programs', () => {
  it('nats://: the server; TLS only if the server asks for it', () => {
    const o = natsConnectionOptions({ url: 'nats://nats.example', creds: undefined, name: 'x' });
    expect(o).toMatchObject({ servers: 'nats.example:4222', name: 'x', waitOnFirstConnect: true });
    expect(o.tls).toBeUndefined();
    expect(o.user).toBeUndefined();
  });

  it('tls://: TLS or nothing, to the same host and port (the scheme is not dropped)', () => {
    const o = natsConnectionOptions({
      url: 'tls://nats.example:4443',
      creds: undefined,
      name: 'x',
    });
    expect(o).toMatchObject({ servers: 'nats.example:4443', tls: {} });
  });

  it('user and password from the URL, decoded; credentials as an authenticator', () => {
    const o = natsConnectionOptions({
      url: 'tls://a%40b:p%3Aw@[::1]:4222',
      creds: { kind: 'nkey', seed: SEED },
      name: 'x',
      inboxPrefix: '_INBOX_x',
    });
    expect(o).toMatchObject({ servers: '[::1]:4222', user: 'a@b', pass: 'p:w', tls: {} });
    expect(o.inboxPrefix).toBe('_INBOX_x');
    expect(typeof o.authenticator).toBe('function');
  });

  it('describes a server without its password', () => {
    expect(describeNats('nats://u:secret@h:1')).toBe('nats://u@h:1');
    expect(describeNats('tls://h')).toBe('tls://h:4222');
  });

  it('refuses what is not nats:// or tls://', () => {
    for (const url of ['http://h', 'h:4222', 'nats://', 'tls:/h'])
      expect(() => natsServerOf(url), url).toThrow(/NATS_URL must be/);
  });
});
