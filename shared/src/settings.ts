// The machinery of the programs' settings tables (issue 20): a program lists
// each setting once (exchange/src/settings.ts, agent/src/settings.ts) with
// its environment variable, its flag, its parser, its default and its
// description; from that one list it reads the environment and the command
// line (every problem at once, decision D34), prints `--help`, and renders
// the README's table of its settings (cli/src/readme-settings.ts).

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/** Settings a program cannot start with: every problem, one line each. */
export class ConfigError extends Error {
  override readonly name = 'ConfigError';
  readonly problems: readonly string[];

  constructor(problems: readonly string[]) {
    super(`invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.problems = problems;
  }
}

/**
 * What a parser throws: the rule the text broke, said after the setting's
 * name ("must be a whole number from 2 to 720"); the text itself is added
 * unless the setting is secret.
 */
export class SettingProblem extends Error {
  override readonly name = 'SettingProblem';
}

/** Text of the environment or of a flag (trimmed, never empty) → the setting's value. */
export type Parser<T> = (text: string) => T;

export interface Setting<K extends string = string, T = unknown, D = unknown> {
  /** The property of the parsed values (and of a program's options). */
  readonly key: K;
  /** The environment variable. */
  readonly name: string;
  /** The command-line flag: the variable without GPUX_, in lower case (flagOf). */
  readonly flag: string;
  readonly parse: Parser<T>;
  /** The value when unset; undefined: none (a required setting, or optional). */
  readonly default: D;
  /** The default as --help and the README show it (markdown): `168`, required, unset, … */
  readonly shownDefault: string;
  /** What it does, for people (markdown; --help shows it without the backticks). */
  readonly description: string;
  /** Never repeated in a problem: tokens, keys, URLs that may hold a password. */
  readonly secret: boolean;
}

interface SettingInit<T> {
  readonly name: string;
  readonly parse: Parser<T>;
  /** Shown instead of the default (markdown): required, generated, the listen host, … */
  readonly shownDefault?: string;
  readonly description: string;
  readonly secret?: boolean;
}

/** `GPUX_SSH_LISTEN` → `--ssh-listen`: the `GPUX_` prefix dropped, lower case, `-` for `_`. */
export function flagOf(name: string): string {
  return `--${name
    .replace(/^GPUX_/, '')
    .toLowerCase()
    .replace(/_/g, '-')}`;
}

function shown(value: unknown): string {
  if (typeof value === 'boolean') return value ? '1' : '0';
  return String(value);
}

/** A setting with a default: its value is never undefined. */
export function setting<K extends string, T>(
  key: K,
  init: SettingInit<T> & { readonly default: NoInfer<T> },
): Setting<K, T, T>;
/** A setting without a default: undefined when unset. */
export function setting<K extends string, T>(
  key: K,
  init: SettingInit<T>,
): Setting<K, T, undefined>;
export function setting<K extends string, T>(
  key: K,
  init: SettingInit<T> & { readonly default?: T },
): Setting<K, T, T | undefined> {
  const value = init.default;
  return {
    key,
    name: init.name,
    flag: flagOf(init.name),
    parse: init.parse,
    default: value,
    shownDefault: init.shownDefault ?? (value === undefined ? 'unset' : `\`${shown(value)}\``),
    description: init.description,
    secret: init.secret ?? false,
  };
}

type AnySetting = Setting<string, unknown, unknown>;

/** What a setting's parser makes. */
export type ParsedOf<S> = S extends Setting<string, infer T, unknown> ? T : never;

/** A setting's value once its default is applied. */
export type ValueOf<S> =
  S extends Setting<string, infer T, infer D> ? (D extends undefined ? T | undefined : T) : never;

/** The settings as set: undefined where unset (options a caller may give, too). */
export type SettingInputs<S extends readonly AnySetting[]> = {
  readonly [E in S[number] as E['key']]?: ParsedOf<E> | undefined;
};

/** The settings with their defaults. */
export type SettingValues<S extends readonly AnySetting[]> = {
  readonly [E in S[number] as E['key']]: ValueOf<E>;
};

export type Env = Readonly<Record<string, string | undefined>>;

/**
 * `--ssh-listen 1.2.3.4:22` and `--ssh-listen=…` into environment names;
 * unknown flags and flags without a value are problems.
 */
export function parseFlags(
  table: readonly AnySetting[],
  args: readonly string[],
): { env: Record<string, string>; problems: string[] } {
  const byFlag = new Map(table.map((s) => [s.flag, s.name]));
  const env: Record<string, string> = {};
  const problems: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const arg = args[i] ?? '';
    const eq = arg.indexOf('=');
    const flag = eq === -1 ? arg : arg.slice(0, eq);
    const name = byFlag.get(flag);
    if (name === undefined) {
      problems.push(`unknown argument "${arg}" (see --help)`);
      continue;
    }
    let value: string | undefined;
    if (eq !== -1) value = arg.slice(eq + 1);
    else if (i + 1 < args.length && !(args[i + 1] ?? '').startsWith('--')) value = args[++i];
    if (value === undefined) problems.push(`${flag} needs a value`);
    else env[name] = value;
  }
  return { env, problems };
}

function problemOf(s: AnySetting, text: string, err: unknown): string {
  if (!(err instanceof SettingProblem)) throw err;
  return s.secret ? `${s.name} ${err.message}` : `${s.name} ${err.message}, got "${text}"`;
}

/**
 * The environment and the command line (a flag wins over its variable) →
 * the settings that are set, parsed; text a parser refuses is a problem,
 * pushed onto `problems` with all the others, and its setting's key onto
 * `failed` (so that rules depending on it are not checked against a guess).
 */
export function readSettings<const S extends readonly AnySetting[]>(
  table: S,
  env: Env,
  args: readonly string[],
  problems: string[],
  failed: Set<string> = new Set(),
): SettingInputs<S> {
  const flags = parseFlags(table, args);
  problems.push(...flags.problems);
  const all: Env = { ...env, ...flags.env };
  const out: Record<string, unknown> = {};
  for (const s of table) {
    const text = all[s.name]?.trim();
    if (text === undefined || text === '') continue;
    try {
      out[s.key] = s.parse(text);
    } catch (err) {
      problems.push(problemOf(s, text, err));
      failed.add(s.key);
    }
  }
  return out as SettingInputs<S>;
}

/**
 * Values a caller gave in code, checked by the same parsers as the
 * environment's text (for settings whose parser gives back text, a number
 * or a boolean, as the agent's do).
 */
export function checkInputs<const S extends readonly AnySetting[]>(
  table: S,
  inputs: SettingInputs<S>,
  problems: string[],
  failed: Set<string> = new Set(),
): SettingInputs<S> {
  const given = inputs as Readonly<Record<string, unknown>>;
  const out: Record<string, unknown> = { ...given };
  for (const s of table) {
    const value = given[s.key];
    let text: string;
    if (typeof value === 'boolean') text = value ? '1' : '0';
    else if (typeof value === 'number' || typeof value === 'string') text = String(value);
    // Nothing given, or a value no text stands for: taken as it is.
    else continue;
    try {
      out[s.key] = s.parse(text.trim());
    } catch (err) {
      problems.push(problemOf(s, text, err));
      failed.add(s.key);
      delete out[s.key];
    }
  }
  return out as SettingInputs<S>;
}

/**
 * `problems` grouped by setting in the table's order (a problem belongs to
 * the setting whose variable it begins with; the command line's and the
 * others first), each setting's in the order found: what --help lists is
 * the order a person reads them in.
 */
export function inTableOrder(table: readonly AnySetting[], problems: readonly string[]): string[] {
  const index = new Map(table.map((s, i) => [s.name, i]));
  const rank = (p: string): number => index.get(/^[A-Z][A-Z0-9_]*/.exec(p)?.[0] ?? '') ?? -1;
  return problems
    .map((p, i) => ({ p, i, r: rank(p) }))
    .sort((a, b) => a.r - b.r || a.i - b.i)
    .map((x) => x.p);
}

/** The settings set, and the defaults of the others. */
export function withDefaults<const S extends readonly AnySetting[]>(
  table: S,
  inputs: SettingInputs<S>,
): SettingValues<S> {
  const given = inputs as Readonly<Record<string, unknown>>;
  const out: Record<string, unknown> = {};
  for (const s of table) out[s.key] = given[s.key] ?? s.default;
  return out as SettingValues<S>;
}

// --- parsers -----------------------------------------------------------------

export const text: Parser<string> = (t) => t;

/** A whole number from `min` to `max`, decimal digits only. */
export function integer(min: number, max: number): Parser<number> {
  return (t) => {
    const n = Number(t);
    if (/^\d{1,10}$/.test(t) && n >= min && n <= max) return n;
    throw new SettingProblem(`must be a whole number from ${min} to ${max}`);
  };
}

/** 1 or more, at most 999,999,999. */
export const positive: Parser<number> = (t) => {
  if (/^\d{1,9}$/.test(t) && Number(t) > 0) return Number(t);
  throw new SettingProblem('must be a positive whole number');
};

export const onOff: Parser<boolean> = (t) => {
  if (t === '1' || t === 'true') return true;
  if (t === '0' || t === 'false') return false;
  throw new SettingProblem('must be 1, true, 0 or false');
};

export function oneOf<const V extends string>(values: readonly V[]): Parser<V> {
  return (t) => {
    const found = values.find((v) => v === t);
    if (found === undefined) {
      throw new SettingProblem(
        values.length === 2
          ? `must be ${values[0]} or ${values[1]}`
          : `must be one of ${values.join(', ')}`,
      );
    }
    return found;
  };
}

/** Text matching `pattern`; `rule` says what it must be, for the problem. */
export function matching(pattern: RegExp, rule: string): Parser<string> {
  return (t) => {
    if (pattern.test(t)) return t;
    throw new SettingProblem(`must be ${rule}`);
  };
}

export const logLevel: Parser<LogLevel> = oneOf(LOG_LEVELS);

// --- documentation -------------------------------------------------------------

/** Markdown as plain text: no backticks, no link targets. */
export function plain(markdown: string): string {
  return markdown.replace(/\[([^\]]*)\]\([^)]*\)/g, '$1').replace(/`/g, '');
}

/** Words of `text` in lines of at most `width` characters. */
export function wrap(text: string, width: number): string[] {
  const lines: string[] = [];
  let line = '';
  for (const word of text.split(/\s+/)) {
    if (word === '') continue;
    if (line !== '' && line.length + 1 + word.length > width) {
      lines.push(line);
      line = word;
    } else line = line === '' ? word : `${line} ${word}`;
  }
  if (line !== '') lines.push(line);
  return lines;
}

/** The settings for `--help`: `  NAME, --flag  [default: x]` and the description below. */
export function settingsHelp(table: readonly AnySetting[]): string[] {
  return table.flatMap((s) => {
    const d = plain(s.shownDefault);
    const tag = d === 'unset' ? '' : d === 'required' ? '  [required]' : `  [default: ${d}]`;
    return [
      `  ${s.name}, ${s.flag}${tag}`,
      ...wrap(plain(s.description), 72).map((l) => `      ${l}`),
    ];
  });
}

/** The README's table of the settings: variable, flag, default, meaning (cells, markdown). */
export function settingsRows(table: readonly AnySetting[]): string[][] {
  return table.map((s) => [`\`${s.name}\``, `\`${s.flag}\``, s.shownDefault, s.description]);
}

export const SETTINGS_HEADER = ['variable', 'flag', 'default', 'meaning'] as const;

/** A markdown table laid out as Prettier lays it out (columns padded, `|` escaped). */
export function markdownTable(header: readonly string[], rows: readonly string[][]): string {
  const cells = [header, ...rows].map((r) => r.map((c) => c.replace(/\|/g, '\\|')));
  const widths = header.map((_, i) => Math.max(3, ...cells.map((r) => [...(r[i] ?? '')].length)));
  const line = (r: readonly string[]): string =>
    `| ${widths.map((w, i) => (r[i] ?? '') + ' '.repeat(w - [...(r[i] ?? '')].length)).join(' | ')} |`;
  const [head, ...body] = cells;
  return [
    line(head ?? []),
    `| ${widths.map((w) => '-'.repeat(w)).join(' | ')} |`,
    ...body.map(line),
  ]
    .join('\n')
    .concat('\n');
}

/** The cells of the first markdown table under the heading `heading` (`## …`) of `markdown`. */
export function tableUnder(markdown: string, heading: string): string[][] {
  const start = markdown.indexOf(`\n${heading}\n`);
  if (start === -1) return [];
  const end = markdown.indexOf('\n## ', start + 1);
  const section = markdown.slice(start, end === -1 ? undefined : end).split('\n');
  const first = section.findIndex((l) => l.startsWith('|'));
  if (first === -1) return [];
  const rows: string[][] = [];
  for (const l of section.slice(first)) {
    if (!l.startsWith('|')) break;
    rows.push(
      l
        .slice(1, -1)
        .split(/(?<!\\)\|/)
        .map((c) => c.trim().replace(/\\\|/g, '|')),
    );
  }
  // Without the line under the header.
  return rows.filter((r) => !r.every((c) => /^:?-+:?$/.test(c)));
}

/** `markdown` with the first table under `heading` replaced by `table`; undefined: no such table. */
export function replaceTableUnder(
  markdown: string,
  heading: string,
  table: string,
): string | undefined {
  const start = markdown.indexOf(`\n${heading}\n`);
  if (start === -1) return undefined;
  const lines = markdown.split('\n');
  let i = markdown.slice(0, start + 1).split('\n').length;
  while (i < lines.length && !(lines[i] ?? '').startsWith('|')) {
    if ((lines[i] ?? '').startsWith('## ')) return undefined;
    i++;
  }
  if (i === lines.length) return undefined;
  let j = i;
  while (j < lines.length && (lines[j] ?? '').startsWith('|')) j++;
  return [...lines.slice(0, i), ...table.replace(/\n$/, '').split('\n'), ...lines.slice(j)].join(
    '\n',
  );
}
