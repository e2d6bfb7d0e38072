// `gpux completion bash|zsh`: a completion script made from the parser's
// own tree (so it cannot miss a command): after `gpux` and each group, its
// subcommands; after a command, its flags; after a flag with a fixed set
// of values (--zone, --status), those values. zsh runs the bash script
// through its bashcompinit.

import type { Command } from 'commander';

import type { Leaf } from './command.js';
import { oneOf } from './parse.js';

interface Place {
  /** The words after `gpux`: `admin accounts`. */
  readonly path: string;
  readonly words: readonly string[];
  /** A flag's long name → its values. */
  readonly choices: ReadonlyMap<string, readonly string[]>;
}

function places(cmd: Command, path: string, out: Place[]): void {
  const choices = new Map<string, readonly string[]>();
  for (const o of cmd.options) {
    if (o.argChoices !== undefined && o.long !== undefined) choices.set(o.long, o.argChoices);
  }
  const flags = cmd.options.flatMap((o) => (o.long === undefined ? [] : [o.long]));
  out.push({
    path,
    words: [...cmd.commands.map((c) => c.name()), ...(path === '' ? [] : [...flags, '--help'])],
    choices,
  });
  for (const c of cmd.commands) places(c, path === '' ? c.name() : `${path} ${c.name()}`, out);
}

const q = (s: string): string => `'${s.replace(/'/g, `'\\''`)}'`;

/** The bash completion script of `program` (and the programs' commands, by name). */
export function bashCompletion(program: Command, programs: readonly string[]): string {
  const all: Place[] = [];
  places(program, '', all);
  const root = all[0];
  const rootWords = [...programs, ...(root?.words ?? [])];
  const paths = all.filter((p) => p.path !== '').map((p) => p.path);
  const cases = all.map(
    (p) => `    ${q(p.path)}) words=${q((p.path === '' ? rootWords : p.words).join(' '))} ;;`,
  );
  const choiceCases = all.flatMap((p) =>
    [...p.choices].map(
      ([flag, values]) => `    ${q(`${p.path}|${flag}`)}) words=${q(values.join(' '))} ;;`,
    ),
  );
  return [
    '# gpux completion for bash: eval "$(gpux completion bash)" (e.g. in ~/.bashrc)',
    `_gpux_paths=${q(`|${paths.join('|')}|`)}`,
    '_gpux() {',
    '  local cur="${COMP_WORDS[COMP_CWORD]}" prev="${COMP_WORDS[COMP_CWORD-1]}" path="" w i words=""',
    '  for ((i = 1; i < COMP_CWORD; i++)); do',
    '    w="${COMP_WORDS[i]}"',
    '    case "$_gpux_paths" in *"|${path:+$path }$w|"*) path="${path:+$path }$w" ;; esac',
    '  done',
    '  case "$path|$prev" in',
    ...choiceCases,
    '    *)',
    '      case "$path" in',
    ...cases.map((c) => `    ${c}`),
    '      esac ;;',
    '  esac',
    '  COMPREPLY=($(compgen -W "$words" -- "$cur"))',
    '}',
    'complete -F _gpux gpux',
    '',
  ].join('\n');
}

/** The zsh completion script: the bash one through zsh's bashcompinit. */
export function zshCompletion(program: Command, programs: readonly string[]): string {
  return [
    '#compdef gpux',
    '# gpux completion for zsh: eval "$(gpux completion zsh)" (e.g. in ~/.zshrc, after compinit)',
    'autoload -U +X bashcompinit && bashcompinit',
    bashCompletion(program, programs),
  ].join('\n');
}

const SHELLS = ['bash', 'zsh'] as const;

/** `gpux completion bash|zsh`. */
export function completionLeaf(program: Command, programs: readonly string[]): Leaf {
  return {
    kind: 'leaf',
    name: 'completion',
    args: [['<shell>', SHELLS.join(' or '), oneOf(SHELLS)]],
    summary: 'the shell completion script for bash or zsh',
    example: 'gpux completion bash > ~/.local/share/bash-completion/completions/gpux',
    noJson: true,
    run(ctx, a) {
      const make = a.arg(0) === 'zsh' ? zshCompletion : bashCompletion;
      ctx.io.out(make(program, programs));
      return Promise.resolve();
    },
  };
}
