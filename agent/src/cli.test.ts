import { readFileSync } from 'node:fs';

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

  it("the README's agent table lists every setting, and nothing else", () => {
    const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
    const section = readme.slice(readme.indexOf('## The agent'));
    const table = section.slice(0, section.indexOf('\n## ', 1));
    const names = [...table.matchAll(/^\| `([A-Z_]+)`/gm)].map((m) => m[1]);
    expect(names).toEqual(AGENT_SETTINGS.map((s) => s.name));
  });

  it('flags are the variables without GPUX_, in lower case', () => {
    expect(flagOf('GPUX_SSH_LISTEN')).toBe('--ssh-listen');
    expect(flagOf('NATS_URL')).toBe('--nats-url');
  });
});
