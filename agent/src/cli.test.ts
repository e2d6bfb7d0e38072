import { describe, expect, it } from 'vitest';

import { runCli } from './cli.js';
import { AGENT_SETTINGS, flagOf } from './settings.js';

describe('agent cli', () => {
  it('--help lists every setting with its flag and exits 0', () => {
    const result = runCli(['--help']);
    expect(result?.exitCode).toBe(0);
    for (const s of AGENT_SETTINGS)
      expect(result?.stdout).toContain(`${s.name}, ${flagOf(s.name)}`);
    expect(result?.stdout).toMatch(/PROVISIONER, --provisioner {2}\[default: kubernetes\]/);
  });

  it('without --help the agent starts', () => {
    expect(runCli([])).toBeUndefined();
    expect(runCli(['--state-dir', '/tmp/x'])).toBeUndefined();
  });

  it('flags are the variables without GPUX_, in lower case', () => {
    expect(flagOf('GPUX_SSH_LISTEN')).toBe('--ssh-listen');
    expect(flagOf('NATS_URL')).toBe('--nats-url');
  });
});
