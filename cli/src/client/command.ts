// The API commands as data: a tree of groups and leaves, each leaf with its
// arguments, options, one example and what it runs; commander (pinned to 14,
// docs/cli.md) parses the command line from it, and `gpux commands --json`
// lists it. A leaf that calls one endpoint and shows its answer is an
// `endpoint(…)`: its call (typed by the generated client) and its renderer.

import { Argument, InvalidArgumentError, Option } from 'commander';
import type { Command } from 'commander';

import type { Answer, Api, ApiClient } from './api.js';
import { CliError, UsageError, errorLines } from './exit.js';
import type { Style } from './output.js';

/** The process as the commands see it (a test passes its own). */
export interface Io {
  out(text: string): void;
  err(text: string): void;
  readonly env: NodeJS.ProcessEnv;
  readonly stdoutIsTty: boolean;
  readonly stdinIsTty: boolean;
  readonly stderrIsTty: boolean;
  /** Asks `question` on the terminal (stderr, the answer from stdin): true for y or yes. */
  confirm(question: string): Promise<boolean>;
  /** Ctrl-C (SIGINT) calls `handler` instead of ending the process, until the returned function is called. */
  onInterrupt(handler: () => void): () => void;
  /** A secret typed by the user: all of stdin when it is not a terminal, else one line, not echoed. */
  readSecret(prompt: string): Promise<string>;
  now(): number;
  /** Instead of the global fetch (unit tests). */
  readonly fetch?: (request: Request) => Promise<Response>;
}

/** What a leaf's run gets. */
export interface Context {
  readonly io: Io;
  readonly style: Style;
  /** --json: print the API's JSON answer instead of the human output. */
  readonly json: boolean;
  /** The exchange of the login (config or environment); not logged in: exit 3. */
  api(): Api;
}

/** A leaf's parsed arguments and options. */
export interface Input {
  /** The positional arguments, in order. */
  readonly args: readonly string[];
  /** Positional argument `i` (commander has checked the required ones). */
  arg(i: number): string;
  /** Positional argument `i` as its parser made it. */
  value<T>(i: number): T;
  /** An option's value, by commander's camelCase name (`--target-type` → `targetType`). */
  opt<T = string>(name: string): T | undefined;
  /** --reason (a leaf that takes one). */
  readonly reason: string | undefined;
}

/** A positional argument: commander's name (`<account-id>`), its description, its parser. */
export type ArgSpec =
  | readonly [string, string]
  | readonly [string, string, (value: string, previous: unknown) => unknown];

export interface OptionSpec {
  /** commander's flags: `--status <status>`, `--yes`. */
  readonly flags: string;
  readonly description: string;
  readonly choices?: readonly string[];
  readonly parse?: (value: string, previous: unknown) => unknown;
  readonly required?: boolean;
}

export interface Leaf {
  readonly kind: 'leaf';
  readonly name: string;
  readonly args?: readonly ArgSpec[];
  readonly summary: string;
  /** Shown under Example in --help and listed by `gpux commands`. */
  readonly example: string;
  readonly options?: readonly OptionSpec[];
  /** A change recorded in the audit log: --reason required, or optional. */
  readonly reason?: 'required' | 'optional';
  /** Without --json (a command that prints no API answer). */
  readonly noJson?: boolean;
  /**
   * Commands under this one, which runs itself too: `gpux cluster ID` and
   * `gpux cluster cordon ID`. A first argument naming one of them runs it.
   */
  readonly children?: readonly Leaf[];
  run(ctx: Context, input: Input): Promise<void>;
}

export interface Group {
  readonly kind: 'group';
  readonly name: string;
  readonly summary: string;
  readonly example: string;
  readonly children: readonly Node[];
}

export type Node = Leaf | Group;

export function group(name: string, summary: string, example: string, children: Node[]): Group {
  return { kind: 'group', name, summary, example, children };
}

/** A leaf that calls one endpoint and prints its answer: the JSON with --json, else `show`'s text. */
export function endpoint<T>(
  spec: Omit<Leaf, 'kind' | 'run' | 'noJson'> & {
    readonly call: (client: ApiClient, input: Input) => Promise<Answer<T>>;
    readonly show: (data: T, style: Style) => string;
  },
): Leaf {
  const { call, show, ...meta } = spec;
  return {
    kind: 'leaf',
    ...meta,
    async run(ctx, input) {
      const api = ctx.api();
      const data = await api.read(call(api.client, input));
      ctx.io.out(ctx.json ? json(data) : show(data, ctx.style));
    },
  };
}

/**
 * A change that spends or gives something away goes ahead with --yes, or
 * when the user says yes on the terminal; without a terminal to ask on and
 * without --yes it is a usage error. Call `canAsk` before sending anything.
 */
export function canAsk(ctx: Context, a: Input, what: string): void {
  if (a.opt<boolean>('yes') !== true && !ctx.io.stdinIsTty) {
    throw new UsageError(`${what}: run it on a terminal to confirm, or pass --yes`);
  }
}

/** --yes, or the user's answer to `question`; says so on stderr when not. */
export async function confirmed(ctx: Context, a: Input, question: string): Promise<boolean> {
  if (a.opt<boolean>('yes') === true) return true;
  if (await ctx.io.confirm(question)) return true;
  ctx.io.err('gpux: nothing done\n');
  return false;
}

/** What a command that follows a stream until Ctrl-C gives the loop that reads it. */
export interface Following {
  /** Aborted by Ctrl-C. */
  readonly signal: AbortSignal;
  /** A second between a stream's end and its reopening. */
  pause(): Promise<void>;
  /** A failure to (re)open the stream, on stderr, with `gpux: reconnecting`. */
  failed(e: unknown): void;
}

/** Runs `follow` until it ends or Ctrl-C aborts its signal (the command then exits 0). */
export async function untilInterrupted(
  ctx: Context,
  follow: (f: Following) => Promise<void>,
): Promise<void> {
  const stop = new AbortController();
  const undo = ctx.io.onInterrupt(() => stop.abort());
  try {
    await follow({
      signal: stop.signal,
      pause: () => new Promise((resolve) => setTimeout(resolve, 1_000)),
      failed: (e) => {
        if (e instanceof CliError) {
          ctx.io.err(`${errorLines(e, ctx.io.now()).join('\n')}\ngpux: reconnecting\n`);
        }
      },
    });
  } finally {
    undo();
  }
}

/** The option of a command that asks first. */
export const YES: OptionSpec = {
  flags: '--yes',
  description: 'do not ask (needed without a terminal)',
};

/** The API's answer as `--json` prints it. */
export function json(data: unknown): string {
  return `${JSON.stringify(data, null, 2)}\n`;
}

/**
 * The options the user gave, as the query or body `T` of a call
 * (`given<Query<'/v1/admin/audit'>>({…})`): each property may be undefined
 * (an option not given) and is then dropped; a name `T` lacks is an error.
 */
export function given<T extends object>(o: { [K in keyof T]?: T[K] | undefined }): T {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(o)) if (v !== undefined) out[k] = v;
  return out as T;
}

/** The path of a call on one object: its id, the leaf's first argument. */
export function byId(id: string): { params: { path: { id: string } } } {
  return { params: { path: { id } } };
}

/** A change of one object: its id (the first argument) and the --reason. */
export function idAndReason(a: Input): {
  params: { path: { id: string } };
  body: { reason: string };
} {
  return { ...byId(a.arg(0)), body: { reason: a.reason ?? '' } };
}

export const REASON_HELP = 'why: kept in the audit log (1 to 1000 characters, not blank)';

function reasonArg(value: string): string {
  if (value.trim() === '') throw new InvalidArgumentError('It must not be blank.');
  if (value.length > 1000) throw new InvalidArgumentError('It is over 1000 characters.');
  return value;
}

/** A leaf's Input, from the commander command that parsed it. */
export function inputOf(cmd: Command): Input {
  const raw = cmd.processedArgs as unknown[];
  const args = raw.map((a) => String(a));
  const opts = cmd.opts<Record<string, unknown>>();
  return {
    args,
    arg(i) {
      const a = args[i];
      if (a === undefined) throw new UsageError(`missing argument ${i + 1} (${cmd.name()} --help)`);
      return a;
    },
    value: <T>(i: number) => raw[i] as T,
    opt: <T>(name: string) => opts[name] as T | undefined,
    reason: typeof opts['reason'] === 'string' ? opts['reason'] : undefined,
  };
}

/** What runs a leaf: makes its context from the parsed options. */
export type Runner = (leaf: Leaf, cmd: Command) => Promise<void>;

function addLeaf(parent: Command, leaf: Leaf, runner: Runner): Command {
  const cmd = parent.command(leaf.name).description(leaf.summary);
  for (const [name, description, parse] of leaf.args ?? []) {
    const a = new Argument(name, description);
    if (parse !== undefined) a.argParser(parse);
    cmd.addArgument(a);
  }
  for (const spec of leaf.options ?? []) {
    const o = new Option(spec.flags, spec.description);
    if (spec.choices !== undefined) o.choices(spec.choices);
    if (spec.parse !== undefined) o.argParser(spec.parse);
    if (spec.required === true) o.makeOptionMandatory();
    cmd.addOption(o);
  }
  if (leaf.reason !== undefined) {
    cmd.addOption(
      new Option('--reason <text>', REASON_HELP)
        .argParser(reasonArg)
        .makeOptionMandatory(leaf.reason === 'required'),
    );
  }
  if (leaf.noJson !== true) cmd.option('--json', "print the API's JSON answer, as it sent it");
  withExample(cmd, leaf.example);
  cmd.action(async (...params: unknown[]) => runner(leaf, params.at(-1) as Command));
  LEAVES.add(cmd);
  if (leaf.children !== undefined && leaf.children.length > 0) {
    // Its options (--json) before a subcommand's name only: after it, they are
    // the subcommand's (every command of the program has positional options).
    cmd.enablePositionalOptions().helpCommand(false);
    for (const child of leaf.children) addLeaf(cmd, child, runner);
  }
  return cmd;
}

const LEAVES = new WeakSet<Command>();

/** Does the command run itself (a leaf, with subcommands or not), rather than only group others? */
export function runsItself(cmd: Command): boolean {
  return LEAVES.has(cmd);
}

const EXAMPLES = new WeakMap<Command, string>();

function withExample(cmd: Command, example: string): void {
  EXAMPLES.set(cmd, example);
  cmd.addHelpText('after', `\nExample:\n  ${example}\n`);
}

/** The example of a command made by register. */
export function exampleOf(cmd: Command): string | undefined {
  return EXAMPLES.get(cmd);
}

/** Adds `node` (and its children) under `parent`. */
export function register(parent: Command, node: Node, runner: Runner): Command {
  if (node.kind === 'leaf') return addLeaf(parent, node, runner);
  const cmd = parent.command(node.name).description(node.summary).helpCommand(false);
  withExample(cmd, node.example);
  for (const child of node.children) register(cmd, child, runner);
  return cmd;
}
