// `npm run gen:readme` (a step of `npm run gen`): the settings tables of the
// README named by its argument, written from the programs' settings tables
// (readme-settings.ts). CI fails when the checked-in file differs.

import { readFileSync, writeFileSync } from 'node:fs';

import { withSettingsTables } from './readme-settings.js';

const file = process.argv[2];
if (file === undefined) {
  process.stderr.write('usage: node cli/dist/gen-readme.js README.md\n');
  process.exit(2);
}
writeFileSync(file, withSettingsTables(readFileSync(file, 'utf8')));
