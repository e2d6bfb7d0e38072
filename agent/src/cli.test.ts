import { describe, expect, it } from 'vitest';
import { runCli } from './cli.js';
import { AGENT_SETTINGS } from './settings.js';

describe('agent cli', () => {
  it('--help lists every setting and exits 0', () => {
    const result = runCli(['--help']);
    expect(result.exitCode).toBe(0);
    for (const name of [
      'EXCHANGE_GRPC_URL',
      'GPUX_TOKEN',
      'NATS_URL',
      'KUBECONFIG',
      'PROVISIONER',
    ]) {
      expect(result.stdout).toContain(name);
    }
    expect(result.stdout).toMatch(/PROVISIONER\s+kubernetes \| simulated/);
    expect(AGENT_SETTINGS).toHaveLength(5);
  });

  it('without --help says it is not implemented and exits 1', () => {
    const result = runCli([]);
    expect(result.exitCode).toBe(1);
    expect(result.stderr).toMatch(/not implemented/);
  });
});
