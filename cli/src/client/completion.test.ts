// The completion scripts run in the real shells: bash completes commands,
// subcommands, flags and a flag's values; zsh loads its script.

import { execFileSync } from 'node:child_process';

import { describe, expect, it } from 'vitest';

import { buildProgram } from './program.js';
import { bashCompletion, zshCompletion } from './completion.js';
import type { Io } from './command.js';

const io = { out: () => undefined, err: () => undefined, env: {} } as unknown as Io;
const program = buildProgram(io, []);

function complete(...words: string[]): string[] {
  const script = `${bashCompletion(program, ['exchange'])}
COMP_WORDS=(${words.map((w) => `'${w}'`).join(' ')}); COMP_CWORD=${words.length - 1}; _gpux
printf '%s\\n' "\${COMPREPLY[@]}"`;
  return execFileSync('bash', ['-c', script], { encoding: 'utf8' })
    .split('\n')
    .filter((l) => l !== '');
}

describe('bash completion', () => {
  it('completes commands and the programs', () => {
    expect(complete('gpux', 'ex')).toEqual(['exchange']);
    expect(complete('gpux', 'te')).toEqual(['terminate']);
  });
  it('subcommands of a group, flags of a command, values of a flag', () => {
    expect(complete('gpux', 'keys', '')).toEqual(['add', 'ls', 'rm', '--help']);
    expect(complete('gpux', 'buy', '8xh100', '--wa')).toEqual(['--wait', '--wait-timeout']);
    expect(complete('gpux', 'buy', '8xh100', '--zone', 'us-')).toEqual(['us-west-1', 'us-east-1']);
    expect(complete('gpux', 'admin', 'accounts', 'su')).toEqual(['suspend']);
  });
});

describe('zsh completion', () => {
  it('loads in zsh', () => {
    const script = `autoload -U compinit && compinit -u\n${zshCompletion(program, [])}\nprint -r -- \${_comps[gpux]}`;
    let out: string;
    try {
      out = execFileSync('zsh', ['-f', '-c', script], { encoding: 'utf8' });
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT' && process.env['CI'] !== 'true') {
        console.log('zsh completion: skipped, zsh is not installed');
        return;
      }
      throw e;
    }
    expect(out.trim()).toBe('_bash_complete -F _gpux');
  });
});
