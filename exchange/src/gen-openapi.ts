// `npm run gen` (step openapi): writes the OpenAPI document to the file named
// by its argument (docs/api/openapi.json), generated from the routes of an
// app built without services (buildApp 'offline'): no database is opened and
// no port is listened on. The root script formats it with Prettier, and CI
// fails when the checked-in file differs from what this writes.

import { writeFileSync } from 'node:fs';

import { buildApp } from './app.js';

const out = process.argv[2];
if (out === undefined) {
  process.stderr.write('usage: node exchange/dist/gen-openapi.js <output.json>\n');
  process.exit(2);
}
const app = buildApp({ logLevel: 'silent' }, 'offline');
await app.ready();
writeFileSync(out, `${JSON.stringify(app.swagger(), null, 2)}\n`);
await app.close();
