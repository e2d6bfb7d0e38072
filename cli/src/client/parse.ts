// Parsers of option and argument values (commander argParser): a value that
// breaks its rule is a usage error (exit 2) before anything is sent. The
// API checks every rule again; these catch what a shell user mistypes.

import { InvalidArgumentError } from 'commander';

import type { Input, OptionSpec } from './command.js';

/** A whole number from `min` to `max`. */
export function wholeNumber(min: number, max: number): (value: string) => number {
  return (value) => {
    if (!/^\d+$/.test(value.trim())) throw new InvalidArgumentError('It must be a whole number.');
    const n = Number(value.trim());
    if (n < min || n > max) throw new InvalidArgumentError(`It must be from ${min} to ${max}.`);
    return n;
  };
}

const DOLLARS = /^[-+]?\$?(\d+)(\.\d{1,2})?$/;

/** Dollars in whole cents (`25`, `25.5`, `$1200.00`, `-3.10`), as a number of dollars. */
export function dollars(value: string): number {
  const v = value.trim().replace(/,/g, '');
  if (!DOLLARS.test(v)) {
    throw new InvalidArgumentError('It must be dollars in whole cents, e.g. 25 or 12.50.');
  }
  const n = Number(v.replace('$', ''));
  return Object.is(n, -0) ? 0 : n;
}

/** Dollars, not below 0. */
export function nonNegativeDollars(value: string): number {
  const n = dollars(value);
  if (n < 0) throw new InvalidArgumentError('It must not be below 0.');
  return n;
}

/** Dollars ≥ 0, or `none` (null: no limit). */
export function dollarsOrNone(value: string): number | null {
  return value.trim().toLowerCase() === 'none' ? null : nonNegativeDollars(value);
}

/** One of `allowed` (an argument; an option has commander's choices). */
export function oneOf(allowed: readonly string[]): (value: string) => string {
  return (value) => {
    if (!allowed.includes(value)) {
      throw new InvalidArgumentError(`It must be one of ${allowed.join(', ')}.`);
    }
    return value;
  };
}

/** A comma-separated list, repeatable: `--scopes trade,read --scopes leases`. */
export function list(value: string, previous: unknown): string[] {
  const before = Array.isArray(previous) ? (previous as string[]) : [];
  const items = value
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  if (items.length === 0) throw new InvalidArgumentError('It must name at least one.');
  return [...before, ...items];
}

/** A list whose every item is one of `allowed`. */
export function listOf(allowed: readonly string[]): (value: string, previous: unknown) => string[] {
  return (value, previous) => {
    const items = list(value, previous);
    const wrong = items.filter((i) => !allowed.includes(i));
    if (wrong.length > 0) {
      throw new InvalidArgumentError(
        `${wrong.join(', ')}: each must be one of ${allowed.join(', ')}.`,
      );
    }
    return items;
  };
}

/** A time with its zone (ISO 8601), as the API takes it. */
export function isoTime(value: string): string {
  const v = value.trim();
  if (
    !/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})$/.test(v) ||
    Number.isNaN(Date.parse(v))
  ) {
    throw new InvalidArgumentError(
      'It must be an ISO 8601 time with its zone, e.g. 2026-05-01T00:00:00Z.',
    );
  }
  return v;
}

/** --limit and --offset of a list (docs/api/accounts.md, lists). */
export const PAGING: readonly OptionSpec[] = [
  {
    flags: '--limit <n>',
    description: 'at most n rows (1 to 100; default 20)',
    parse: wholeNumber(1, 100),
  },
  {
    flags: '--offset <n>',
    description: 'skip the first n rows (default 0)',
    parse: wholeNumber(0, 1_000_000_000),
  },
];

/** --limit and --offset as given (undefined when not). */
export function paging(a: Input): { limit: number | undefined; offset: number | undefined } {
  return { limit: a.opt<number>('limit'), offset: a.opt<number>('offset') };
}

/** An instance type as the API spells it, `16xh100`: whole nodes of 8 GPUs of one type. */
export interface Instance {
  readonly gpus: number;
  readonly gpuType: string;
}

/** `<gpus>x<gpu type>` (`8xh100`, `16xb200`), the GPUs a multiple of 8. */
export function instanceOf(types: readonly string[]): (value: string) => Instance {
  return (value) => {
    const m = /^(\d+)x([a-z0-9]+)$/.exec(value.trim().toLowerCase());
    if (m === null) {
      throw new InvalidArgumentError('It must be <gpus>x<gpu type>, e.g. 8xh100 or 16xb200.');
    }
    const [, count = '', gpuType = ''] = m;
    const gpus = Number(count);
    if (gpus < 8 || gpus % 8 !== 0 || gpus > 80_000) {
      throw new InvalidArgumentError('The GPUs must be whole nodes of 8: 8, 16, 24, …');
    }
    if (!types.includes(gpuType)) {
      throw new InvalidArgumentError(`The GPU type must be one of ${types.join(', ')}.`);
    }
    return { gpus, gpuType };
  };
}

const UNITS: Readonly<Record<string, number>> = { s: 1_000, m: 60_000, h: 3_600_000 };

/** A length of time: `90s`, `10m`, `2h`, or seconds alone; in milliseconds. */
export function timeSpan(value: string): number {
  const m = /^(\d+)([smh]?)$/.exec(value.trim());
  if (m === null) throw new InvalidArgumentError('It must be a time such as 90s, 10m or 2h.');
  const [, n = '0', unit = ''] = m;
  const ms = Number(n) * (UNITS[unit === '' ? 's' : unit] ?? 1_000);
  if (ms <= 0) throw new InvalidArgumentError('It must be more than 0.');
  return ms;
}

/** Dollars per GPU-hour: more than 0, whole cents. */
export function price(value: string): number {
  const n = dollars(value);
  if (n <= 0) throw new InvalidArgumentError('It must be more than 0.');
  return n;
}
