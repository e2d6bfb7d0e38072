// `gpux commands [--json]`: every command with its arguments and flags, read
// from the parser's own tree (so the list cannot miss one), for tools and
// assistants that drive the CLI; the programs' commands with their settings.

import type { Command } from 'commander';

import { exampleOf, runsItself } from './command.js';
import { EXIT } from './exit.js';

export interface FlagInfo {
  /** `--reason <text>`, `-h, --help`. */
  readonly flags: string;
  readonly description: string;
  /** The environment variable of a program's setting. */
  readonly env?: string;
  readonly required?: boolean;
  readonly choices?: readonly string[];
}

export interface CommandInfo {
  /** The words after `gpux`: `admin accounts suspend`. */
  readonly command: string;
  readonly summary: string;
  readonly usage: string;
  /** A group: only its subcommands run. */
  readonly group: boolean;
  /** A program's command: its arguments go to it as they are (`gpux <command> --help`). */
  readonly passthrough: boolean;
  readonly arguments: readonly { name: string; required: boolean; description: string }[];
  readonly options: readonly FlagInfo[];
  readonly example: string | null;
}

export interface CommandList {
  readonly commands: readonly CommandInfo[];
  readonly exit_codes: Readonly<Record<string, string>>;
}

const EXIT_MEANINGS: Readonly<Record<keyof typeof EXIT, string>> = {
  ok: 'success',
  usage: 'usage: a bad command line, or the API answered 400 or 413',
  unauthorized: 'not logged in, or the API answered 401 or 403',
  notFound: 'the API answered 404',
  conflict: 'the API answered 409 or 422',
  insufficientFunds: 'the API answered 402',
  rateLimited: 'the API answered 429 (stderr says when to retry)',
  server: 'the API answered 5xx, or could not be reached',
  waitTimeout: 'buy --wait: --wait-timeout passed first; the order was left resting',
  interrupted: 'Ctrl-C while waiting; an order was left as it was',
};

function path(cmd: Command): string {
  const names: string[] = [];
  for (let c: Command | null = cmd; c !== null && c.parent !== null; c = c.parent)
    names.unshift(c.name());
  return names.join(' ');
}

function describe(cmd: Command): CommandInfo {
  const name = path(cmd);
  return {
    command: name,
    summary: cmd.description(),
    usage: `gpux ${name} ${cmd.usage()}`,
    group: cmd.commands.length > 0 && !runsItself(cmd),
    passthrough: false,
    arguments: cmd.registeredArguments.map((a) => ({
      name: a.name(),
      required: a.required,
      description: a.description,
    })),
    options: [
      ...cmd.options.map((o) => ({
        flags: o.flags,
        description: o.description,
        required: o.mandatory,
        ...(o.argChoices === undefined ? {} : { choices: o.argChoices }),
      })),
      {
        flags: '-h, --help',
        description: 'this command\u2019s usage, with an example',
        required: false,
      },
    ],
    example: exampleOf(cmd) ?? null,
  };
}

function walk(cmd: Command): CommandInfo[] {
  return cmd.commands.flatMap((c) => [describe(c), ...walk(c)]);
}

/** The whole command line: the programs' commands, then the API's. */
export async function commandList(
  program: Command,
  programs: readonly { name: string; summary: string; flags(): Promise<readonly FlagInfo[]> }[],
): Promise<CommandList> {
  const runs = await Promise.all(
    programs.map(async (p): Promise<CommandInfo> => ({
      command: p.name,
      summary: p.summary,
      usage: `gpux ${p.name} [--<flag> <value> …]`,
      group: false,
      passthrough: true,
      arguments: [],
      options: [
        ...(await p.flags()),
        { flags: '-h, --help', description: 'its settings and flags; starts nothing' },
      ],
      example: `gpux ${p.name} --help`,
    })),
  );
  const exitCodes: Record<string, string> = {};
  for (const [k, code] of Object.entries(EXIT))
    exitCodes[String(code)] = EXIT_MEANINGS[k as keyof typeof EXIT];
  return { commands: [...runs, ...walk(program)], exit_codes: exitCodes };
}

/** `gpux commands` without --json: one line a command. */
export function commandsText(list: CommandList): string {
  const rows = list.commands.filter((c) => !c.group);
  const width = Math.max(...rows.map((c) => c.command.length));
  return rows.map((c) => `gpux ${c.command.padEnd(width)}  ${c.summary}`).join('\n') + '\n';
}
