// `gpux rekey`: re-seal every stored kubeconfig under the newest key of
// GPUX_SECRET_KEY (leases/rekey.ts), with the exchange's own settings
// (DATABASE_URL, GPUX_SECRET_KEY newest first). One line says what it did;
// exit 1 when a kubeconfig opens under none of the keys.

import { pino } from 'pino';

import type { Database } from './db/database.js';
import { DataDirInUse } from './db/data-dir-lock.js';
import { ConfigError, loadConfig } from './config.js';
import { rekey, rekeyWebhooks } from './leases/rekey.js';
import { SecretBox } from './leases/secret-box.js';
import { openDatabase } from './server.js';

export const REKEY_HELP = `usage: gpux rekey [--<exchange flag> <value> …]

Seals every stored kubeconfig and webhook secret again under the newest key of GPUX_SECRET_KEY
(the first of a comma-separated list, newest first), so that the older keys
can then be dropped from it (docs/operations.md, "Rotating the secret key").
Reads the exchange's settings (DATABASE_URL, GPUX_SECRET_KEY); safe while
exchanges run on the same database.
`;

/** ` (a, b, …)`: the first ten of `ids`, or nothing. */
function listed(ids: readonly string[]): string {
  if (ids.length === 0) return '';
  return ` (${ids.slice(0, 10).join(', ')}${ids.length > 10 ? ', …' : ''})`;
}

export async function runRekey(
  args: readonly string[] = process.argv.slice(3),
  env: NodeJS.ProcessEnv = process.env,
): Promise<number> {
  if (args.includes('--help') || args.includes('-h')) {
    process.stdout.write(REKEY_HELP);
    return 0;
  }
  let config;
  try {
    // Rekeying publishes nothing: no NATS needed.
    config = loadConfig({ GPUX_IN_PROCESS_BUS: '1', ...env }, args);
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    process.stderr.write(err.problems.map((p) => `gpux rekey: ${p}\n`).join(''));
    return 2;
  }
  if (config.secretKey === undefined) {
    process.stderr.write('gpux rekey: GPUX_SECRET_KEY must name the keys, newest first\n');
    return 2;
  }
  const logger = pino({ level: config.logLevel === 'info' ? 'warn' : config.logLevel });
  let db: Database;
  try {
    db = await openDatabase(config, logger);
  } catch (err) {
    if (!(err instanceof DataDirInUse)) throw err;
    process.stderr.write(`gpux rekey: ${err.message}; stop the exchange first\n`);
    return 1;
  }
  try {
    const box = new SecretBox(config.secretKey);
    const r = await rekey(db, box);
    const w = await rekeyWebhooks(db, box);
    process.stdout.write(
      `gpux rekey: ${r.resealed} kubeconfigs sealed again under the newest key, ${r.current} already were, ${r.unreadable.length} open under none of the keys${listed(r.unreadable)}; ` +
        `webhook secrets: ${w.resealed} sealed again, ${w.current} already were, ${w.unreadable.length} open under none${listed(w.unreadable)}\n`,
    );
    return r.unreadable.length + w.unreadable.length > 0 ? 1 : 0;
  } finally {
    await db.close();
  }
}
