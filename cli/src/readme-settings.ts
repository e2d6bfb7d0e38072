// The README's settings tables, generated from the programs' tables
// (exchange/src/settings.ts, agent/src/settings.ts): `npm run gen:readme`
// rewrites them in place; readme-settings.test.ts fails when README.md
// differs from what this writes. Only the first table under each heading
// is touched; the text around it is the README's own.

import { AGENT_SETTINGS } from '@gpux/agent';
import { EXCHANGE_SETTINGS } from '@gpux/exchange';
import { SETTINGS_HEADER, markdownTable, replaceTableUnder, settingsRows } from '@gpux/shared';
import type { Setting } from '@gpux/shared';

/** Each README heading and the table of settings under it. */
export const README_SETTINGS: readonly {
  readonly heading: string;
  readonly table: readonly Setting<string, unknown, unknown>[];
}[] = [
  { heading: '## Settings of the exchange', table: EXCHANGE_SETTINGS },
  { heading: '## The agent', table: AGENT_SETTINGS },
];

/** `readme` with its settings tables as the programs' tables say. */
export function withSettingsTables(readme: string): string {
  let out = readme;
  for (const { heading, table } of README_SETTINGS) {
    const next = replaceTableUnder(
      out,
      heading,
      markdownTable(SETTINGS_HEADER, settingsRows(table)),
    );
    if (next === undefined) throw new Error(`README.md has no table under "${heading}"`);
    out = next;
  }
  return out;
}
