// Human output of the API commands (docs/cli.md): tables drawn by
// cli-table3, money in dollars, times in the user's time zone, colour only
// when stdout is a terminal and NO_COLOR is not set (no-color.org). `--json`
// bypasses all of this and prints the API's own JSON.

import Table from 'cli-table3';

export interface Style {
  /** Colour escapes in the output. */
  readonly colour: boolean;
  /** The zone times are shown in; undefined: the system's (TZ). */
  readonly timeZone?: string | undefined;
}

/** Colour on a terminal, never with NO_COLOR set to anything but the empty string. */
export function wantsColour(isTty: boolean, env: NodeJS.ProcessEnv): boolean {
  const noColour = env['NO_COLOR'];
  return isTty && (noColour === undefined || noColour === '');
}

const CODES = {
  bold: [1, 22],
  dim: [2, 22],
  red: [31, 39],
  green: [32, 39],
  yellow: [33, 39],
  cyan: [36, 39],
} as const;

export type Paint = keyof typeof CODES;

export function paint(text: string, how: Paint, style: Style): string {
  if (!style.colour || text === '') return text;
  const [on, off] = CODES[how];
  return `\u001b[${on}m${text}\u001b[${off}m`;
}

const DOLLARS = new Intl.NumberFormat('en-US', {
  style: 'currency',
  currency: 'USD',
  minimumFractionDigits: 2,
  maximumFractionDigits: 2,
});

/** Dollars as the API sends them (whole cents) → `$1,234.50`, `-$12.00`; null → `none`. */
export function money(amount: number | null | undefined): string {
  if (amount === null || amount === undefined) return 'none';
  return DOLLARS.format(amount === 0 ? 0 : amount);
}

/** A signed amount, coloured by its sign: red when the account pays. */
export function signedMoney(amount: number, style: Style): string {
  const text = amount > 0 ? `+${money(amount)}` : money(amount);
  return amount < 0 ? paint(text, 'red', style) : amount > 0 ? paint(text, 'green', style) : text;
}

/** An ISO time of the API → `2026-11-22 10:00:00 PST` in the user's zone; null → `-`. */
export function time(iso: string | null | undefined, style: Style): string {
  if (iso === null || iso === undefined || iso === '') return '-';
  const at = new Date(iso);
  if (Number.isNaN(at.getTime())) return iso;
  const parts = new Intl.DateTimeFormat('en-US', {
    ...(style.timeZone === undefined ? {} : { timeZone: style.timeZone }),
    year: 'numeric',
    month: '2-digit',
    day: '2-digit',
    hour: '2-digit',
    minute: '2-digit',
    second: '2-digit',
    hourCycle: 'h23',
    timeZoneName: 'short',
  }).formatToParts(at);
  const p = (type: Intl.DateTimeFormatPartTypes): string =>
    parts.find((x) => x.type === type)?.value ?? '';
  return `${p('year')}-${p('month')}-${p('day')} ${p('hour')}:${p('minute')}:${p('second')} ${p('timeZoneName')}`;
}

/** A value that may be missing → text (`-` for none). */
export function text(v: string | number | boolean | null | undefined): string {
  if (v === null || v === undefined || v === '') return '-';
  return String(v);
}

/** Rows under a header, drawn by cli-table3; `(none)` when there are no rows. */
export function table(
  head: readonly string[],
  rows: readonly (readonly string[])[],
  style: Style,
): string {
  if (rows.length === 0) return `${paint('(none)', 'dim', style)}\n`;
  const t = new Table({
    head: head.map((h) => paint(h, 'bold', style)),
    // cli-table3's own colours are off: ours follow the terminal and NO_COLOR.
    style: { head: [], border: [], compact: true, 'padding-left': 0, 'padding-right': 2 },
    chars: {
      top: '',
      'top-mid': '',
      'top-left': '',
      'top-right': '',
      bottom: '',
      'bottom-mid': '',
      'bottom-left': '',
      'bottom-right': '',
      left: '',
      'left-mid': '',
      mid: '',
      'mid-mid': '',
      right: '',
      'right-mid': '',
      middle: '',
    },
  });
  for (const r of rows) t.push([...r]);
  // Trailing blanks of the padding are not output.
  return `${t
    .toString()
    .split('\n')
    .map((l) => l.trimEnd())
    .join('\n')}\n`;
}

/** `name  value` lines, the names aligned. */
export function fields(pairs: readonly (readonly [string, string])[], style: Style): string {
  const width = Math.max(0, ...pairs.map(([k]) => k.length));
  return pairs.map(([k, v]) => `${paint(k.padEnd(width), 'bold', style)}  ${v}`).join('\n') + '\n';
}

/** Where a page of a list is: `1–20 of 57; next page: --offset 20`. */
export function pageLine(
  page: { readonly total: number; readonly limit: number; readonly offset: number },
  shown: number,
  style: Style,
): string {
  if (page.total === 0 || shown === 0)
    return page.offset > 0
      ? `${paint(`nothing from offset ${page.offset} (of ${page.total})`, 'dim', style)}\n`
      : '';
  const last = page.offset + shown;
  const more = last < page.total ? `; next page: --offset ${last}` : '';
  return `${paint(`${page.offset + 1}–${last} of ${page.total}${more}`, 'dim', style)}\n`;
}
