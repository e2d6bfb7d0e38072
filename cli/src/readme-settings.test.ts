import { readFileSync } from 'node:fs';

import { SETTINGS_HEADER, settingsRows, tableUnder } from '@gpux/shared';
import { describe, expect, it } from 'vitest';

import { README_SETTINGS, withSettingsTables } from './readme-settings.js';

const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');

describe("the README's settings tables (npm run gen:readme)", () => {
  it.each(README_SETTINGS.map((r) => [r.heading, r.table] as const))(
    '"%s" lists every setting of its program, as its table says, and nothing else',
    (heading, table) => {
      expect(tableUnder(readme, heading)).toEqual([[...SETTINGS_HEADER], ...settingsRows(table)]);
    },
  );

  it('are what npm run gen:readme writes, to the character', () => {
    expect(withSettingsTables(readme)).toBe(readme);
  });

  it('each variable once, each flag once', () => {
    for (const { table } of README_SETTINGS) {
      expect(new Set(table.map((s) => s.name)).size).toBe(table.length);
      expect(new Set(table.map((s) => s.flag)).size).toBe(table.length);
    }
  });
});
