import { describe, expect, it } from 'vitest';
import { DEFAULT_LIMITS, SshGatewayConfigError, compileGatewayConfig } from './gateway-config.js';
import type { SshGatewayOptions } from './gateway-config.js';
import { SILENT_LOGGER } from './logger.js';

const base: SshGatewayOptions = {
  port: 0,
  hostKey: {
    privateKey: Buffer.alloc(0),
    publicKey: 'ssh-ed25519 AAAA',
    fingerprint: 'SHA256:x',
  },
  directory: { lookup: () => undefined },
  logger: SILENT_LOGGER,
};

describe('SSH gateway options', () => {
  it('fill in the defaults', () => {
    const config = compileGatewayConfig(base);
    expect(config.host).toBe('0.0.0.0');
    expect(config.port).toBe(0);
    expect(config.limits).toEqual(DEFAULT_LIMITS);
    expect(DEFAULT_LIMITS.revokeCloseFallbackMs).toBe(250);
  });

  it('take partial limits', () => {
    const config = compileGatewayConfig({
      ...base,
      host: '127.0.0.1',
      limits: { maxConnections: 3 },
    });
    expect(config.limits).toEqual({ ...DEFAULT_LIMITS, maxConnections: 3 });
    expect(config.host).toBe('127.0.0.1');
  });

  it('report every bad value at once', () => {
    let error: unknown;
    try {
      compileGatewayConfig({
        ...base,
        port: 70_000,
        limits: { maxConnections: 0, authTimeoutMs: 1.5, maxChannelsPerConnection: -1 },
      });
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(SshGatewayConfigError);
    expect((error as SshGatewayConfigError).problems).toHaveLength(4);
  });
});
