import { describe, expect, it } from 'vitest';

import {
  ConfigError,
  checkInputs,
  inTableOrder,
  integer,
  markdownTable,
  matching,
  onOff,
  oneOf,
  readSettings,
  replaceTableUnder,
  setting,
  settingsHelp,
  settingsRows,
  tableUnder,
  text,
  withDefaults,
} from './settings.js';

const TABLE = [
  setting('port', {
    name: 'PORT',
    parse: integer(0, 65_535),
    default: 8080,
    description: 'the `HTTP` port',
  }),
  setting('token', {
    name: 'GPUX_TOKEN',
    parse: matching(/^\S{16,}$/, '16 characters or more'),
    secret: true,
    shownDefault: 'required',
    description: 'a token',
  }),
  setting('mode', { name: 'GPUX_MODE', parse: oneOf(['a', 'b', 'c']), description: 'a mode' }),
  setting('on', { name: 'GPUX_ON', parse: onOff, default: false, description: 'on or off' }),
  setting('dir', { name: 'GPUX_DIR', parse: text, default: '.x', description: 'a | directory' }),
] as const;

function read(env: Record<string, string>, args: string[] = []) {
  const problems: string[] = [];
  const failed = new Set<string>();
  const inputs = readSettings(TABLE, env, args, problems, failed);
  return { inputs, problems, failed, values: withDefaults(TABLE, inputs) };
}

describe('settings tables', () => {
  it('reads each setting by its variable, parsed; unset and blank take the default', () => {
    const r = read({ PORT: ' 0 ', GPUX_MODE: 'b', GPUX_ON: 'true', GPUX_DIR: '' });
    expect(r.problems).toEqual([]);
    expect(r.inputs).toEqual({ port: 0, mode: 'b', on: true });
    expect(r.values).toEqual({ port: 0, token: undefined, mode: 'b', on: true, dir: '.x' });
  });

  it('flags are the variables without GPUX_, in lower case, and win', () => {
    const r = read({ PORT: '1', GPUX_MODE: 'a' }, ['--port', '2', '--mode=c', '--on', '1']);
    expect(r.values).toMatchObject({ port: 2, mode: 'c', on: true });
    expect(TABLE.map((s) => s.flag)).toEqual(['--port', '--token', '--mode', '--on', '--dir']);
  });

  it('every problem at once, in the order of the table; a secret is never repeated', () => {
    const r = read({ PORT: '70000', GPUX_TOKEN: 'short secret', GPUX_MODE: 'z', GPUX_ON: 'yes' }, [
      '--nope',
      '--dir',
    ]);
    expect(r.problems).toEqual([
      'unknown argument "--nope" (see --help)',
      '--dir needs a value',
      'PORT must be a whole number from 0 to 65535, got "70000"',
      'GPUX_TOKEN must be 16 characters or more',
      'GPUX_MODE must be one of a, b, c, got "z"',
      'GPUX_ON must be 1, true, 0 or false, got "yes"',
    ]);
    expect([...r.failed]).toEqual(['port', 'token', 'mode', 'on']);
    expect(new ConfigError(r.problems).message).toContain('\n  - PORT must be');
  });

  it('values given in code are checked by the same parsers', () => {
    const problems: string[] = [];
    const inputs = checkInputs(TABLE, { port: 70_000, mode: 'b', on: true }, problems);
    expect(problems).toEqual(['PORT must be a whole number from 0 to 65535, got "70000"']);
    expect(inputs).toEqual({ mode: 'b', on: true });
  });

  it('--help shows each setting with its flag, its default and its description', () => {
    expect(settingsHelp(TABLE).slice(0, 4)).toEqual([
      '  PORT, --port  [default: 8080]',
      '      the HTTP port',
      '  GPUX_TOKEN, --token  [required]',
      '      a token',
    ]);
    expect(settingsHelp(TABLE)).toContain('  GPUX_ON, --on  [default: 0]');
    expect(settingsHelp(TABLE)).toContain('  GPUX_MODE, --mode');
  });

  it('a markdown table of the settings reads back as the same cells', () => {
    const header = ['variable', 'flag', 'default', 'meaning'];
    const rows = settingsRows(TABLE);
    expect(rows[0]).toEqual(['`PORT`', '`--port`', '`8080`', 'the `HTTP` port']);
    const md = `# x\n\n## Settings\n\nSome text.\n\n${markdownTable(header, rows)}\nAfter.\n\n## Next\n\n| a |\n| - |\n`;
    expect(tableUnder(md, '## Settings')).toEqual([header, ...rows]);
    expect(tableUnder(md, '## Missing')).toEqual([]);
    // Replacing the table keeps the text around it.
    const other = markdownTable(['a', 'b'], [['1', '2']]);
    const replaced = replaceTableUnder(md, '## Settings', other);
    expect(replaced).toBe(md.replace(markdownTable(header, rows), other));
    expect(
      replaceTableUnder('## Settings\n\nno table\n\n## Next\n\n| a |\n', '## Settings', other),
    ).toBeUndefined();
  });
});

describe('inTableOrder', () => {
  it("groups problems by setting in the table's order, the command line's first", () => {
    expect(
      inTableOrder(TABLE, [
        'GPUX_ON must be 1',
        'PORT is required',
        'GPUX_DIR and PORT go together',
        'unknown argument "--x"',
        'PORT: cannot read',
      ]),
    ).toEqual([
      'unknown argument "--x"',
      'PORT is required',
      'PORT: cannot read',
      'GPUX_ON must be 1',
      'GPUX_DIR and PORT go together',
    ]);
  });
});
