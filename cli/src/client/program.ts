// The API commands' command line (docs/cli.md): commander 14 builds it from
// the command tree (account-commands.ts, admin-*.ts), prints the help, and
// refuses a bad command line with exit 2 before anything is sent. The
// programs' commands (`gpux exchange`, …) parse their own arguments: gpux.ts
// runs them without this parser; they are only listed here.

import { Command, CommanderError, Help } from 'commander';

import { ACCOUNT_COMMANDS } from './account-commands.js';
import { PROVIDER_COMMANDS } from './provider-commands.js';
import { ACCOUNT_GROUPS } from './admin-accounts.js';
import { MARKET_NODES } from './admin-market.js';
import { MARKET_COMMANDS } from './market-commands.js';
import { DATA_COMMANDS } from './data-commands.js';
import { WEBHOOKS } from './webhook-commands.js';
import { ORDER_COMMANDS } from './order-commands.js';
import { LEASE_COMMANDS } from './lease-commands.js';
import { SSH_COMMANDS } from './ssh-commands.js';
import { openApi } from './api.js';
import { group, inputOf, json, register } from './command.js';
import type { Context, Io, Leaf, Node, Runner } from './command.js';
import { resolveLogin } from './config.js';
import { ChildExit, CliError, EXIT, errorLines } from './exit.js';
import { wantsColour } from './output.js';
import { commandList, commandsText } from './commands-list.js';
import { completionLeaf } from './completion.js';
import type { FlagInfo } from './commands-list.js';

export type { FlagInfo } from './commands-list.js';

/** A command of gpux that runs one of the programs (listed, not parsed here). */
export interface ProgramCommand {
  readonly name: string;
  readonly summary: string;
  /** Its flags, for `gpux commands --json` (loads the program). */
  flags(): Promise<readonly FlagInfo[]>;
}

export const ADMIN: Node = group(
  'admin',
  "the operators' API: accounts, tokens, orders, leases, money, books, clusters, the audit log",
  'gpux admin accounts suspend acc_1a2b3c --reason "chargeback under review"',
  [...ACCOUNT_GROUPS, ...MARKET_NODES],
);

const HEADINGS = {
  programs: 'Run the market:',
  api: 'Use an exchange (gpux login first):',
} as const;

function wrap(text: string, width: number, indent: number): string {
  const lines: string[] = [];
  let line = '';
  for (const word of text.split(' ')) {
    if (line !== '' && indent + line.length + 1 + word.length > width) {
      lines.push(line);
      line = word;
    } else line = line === '' ? word : `${line} ${word}`;
  }
  lines.push(line);
  return lines.join(`\n${' '.repeat(indent)}`);
}

/** `gpux --help`: every command, the programs' first. */
export function rootHelp(program: Command, programs: readonly ProgramCommand[]): string {
  const row = (name: string, summary: string): string =>
    `  ${name.padEnd(15)}${wrap(summary, 79, 17)}`;
  return [
    'usage: gpux <command> [--help]',
    '',
    HEADINGS.programs,
    ...programs.map((p) => row(p.name, p.summary)),
    '',
    HEADINGS.api,
    ...program.commands.map((c) => row(c.name(), c.description())),
    '',
    "gpux <command> --help lists the command's settings and flags and exits;",
    'gpux help <command> … does too. The commands of an exchange are in docs/cli.md.',
    '',
  ].join('\n');
}

function commandsLeaf(program: Command, programs: readonly ProgramCommand[]): Leaf {
  return {
    kind: 'leaf',
    name: 'commands',
    summary: 'every command with its arguments and flags; --json for programs',
    example: "gpux commands --json | jq '.commands[].command'",
    async run(ctx) {
      const list = await commandList(program, programs);
      ctx.io.out(ctx.json ? json(list) : commandsText(list));
    },
  };
}

/** The command line of the API commands, writing to `io`. */
export function buildProgram(io: Io, programs: readonly ProgramCommand[]): Command {
  const program: Command = new Command('gpux')
    // A command's options before its subcommand's name only, after it the
    // subcommand's: `gpux cluster ID --json` and `gpux cluster cordon ID --json`.
    .enablePositionalOptions()
    .helpCommand(false)
    .helpOption('-h, --help', 'its usage, with an example')
    .exitOverride()
    .showHelpAfterError('(--help for usage)')
    .configureOutput({
      writeOut: (s) => io.out(s),
      writeErr: (s) => io.err(s),
      outputError: (s, write) => write(s.replace(/^error: /, 'gpux: ')),
    })
    .configureHelp({
      formatHelp: (cmd, helper): string =>
        cmd === program
          ? rootHelp(program, programs)
          : Help.prototype.formatHelp.call(helper, cmd, helper),
    });
  const runner: Runner = async (leaf, cmd) => {
    const opts = cmd.opts<{ json?: boolean }>();
    const ctx: Context = {
      io,
      style: { colour: wantsColour(io.stdoutIsTty, io.env) },
      json: opts.json === true,
      api() {
        const login = resolveLogin(io.env);
        return openApi(login.url, login.token, io.fetch === undefined ? {} : { fetch: io.fetch });
      },
    };
    await leaf.run(ctx, inputOf(cmd));
  };
  const customer = [
    ...ACCOUNT_COMMANDS,
    ...MARKET_COMMANDS,
    ...DATA_COMMANDS,
    ...ORDER_COMMANDS,
    ...LEASE_COMMANDS,
    ...SSH_COMMANDS,
    ...PROVIDER_COMMANDS,
    WEBHOOKS,
  ];
  for (const node of customer) register(program, node, runner);
  register(program, ADMIN, runner);
  register(program, commandsLeaf(program, programs), runner);
  register(
    program,
    completionLeaf(
      program,
      programs.map((p) => p.name),
    ),
    runner,
  );
  return program;
}

/**
 * Runs the API command of `argv` (the arguments after `gpux`); resolves
 * with the exit code (docs/cli.md): what failed is on stderr.
 */
export async function runClient(
  argv: readonly string[],
  io: Io,
  programs: readonly ProgramCommand[],
): Promise<number> {
  const program = buildProgram(io, programs);
  const first = argv[0];
  if (first === undefined || first === '--help' || first === '-h' || first === 'help') {
    io.out(rootHelp(program, programs));
    return EXIT.ok;
  }
  if (!first.startsWith('-') && !program.commands.some((c) => c.name() === first)) {
    io.err(`gpux: no command ${first}\n${rootHelp(program, programs)}`);
    return EXIT.usage;
  }
  try {
    await program.parseAsync([...argv], { from: 'user' });
    return EXIT.ok;
  } catch (e) {
    // commander has printed its message (or the help): 0 for help, else a usage error.
    if (e instanceof CommanderError) return e.exitCode === 0 ? EXIT.ok : EXIT.usage;
    if (e instanceof ChildExit) return e.status;
    if (e instanceof CliError) {
      io.err(errorLines(e, io.now()).join('\n') + '\n');
      return e.exitCode;
    }
    io.err(`gpux: unexpected error: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
    return 1;
  }
}
