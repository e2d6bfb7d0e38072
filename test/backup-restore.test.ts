// docs/operations.md "Backup and restore", followed on a running market:
// pg_dump of the exchange's database while a lease is active, pg_restore
// into a new database, the exchange started on it with the same
// GPUX_SECRET_KEY (and a new JetStream stream: the stream is derived),
// and every lease's kubeconfig still reads, its balance and lease as they were.

import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// Not part of the exchange's package (left out of its dist): listed by path in test/tsconfig.json.
import { createDatabase, uniqueDatabaseName } from '../exchange/src/db/testing/admin-database.js';
import type { ScratchDatabase } from '../exchange/src/db/testing/admin-database.js';
import { startExchangeProcess } from './support/exchange-process.js';
import type { ExchangeProcess } from './support/exchange-process.js';
import { ProviderStack, deleteStream } from './support/provider-stack.js';

const SECRET_KEY = randomBytes(32).toString('base64');

let stack: ProviderStack;
let restored: ScratchDatabase | undefined;
let second: ExchangeProcess | undefined;

beforeAll(async () => {
  stack = await ProviderStack.start({
    label: 'gpux_backup',
    exchangeEnv: { GPUX_SECRET_KEY: SECRET_KEY },
  });
});

afterAll(async () => {
  await second?.stop('SIGKILL');
  await restored?.drop();
  // The restored exchange's own stream: nothing else removes it.
  if (stack !== undefined) await deleteStream(stack.natsUrl, `${stack.natsStream}_RESTORED`);
  await stack?.close();
});

async function get(url: string, path: string, token: string): Promise<Response> {
  return fetch(`${url}${path}`, { headers: { authorization: `Bearer ${token}` } });
}

describe('backup and restore (docs/operations.md)', () => {
  it('a restored database serves every lease and its kubeconfig under the same key', async () => {
    await stack.waitForAsks(8);
    const order = await stack.buyNode();
    const leaseId = order['lease_id'] as string;
    await stack.waitForLease(leaseId);
    const kubeconfig = await stack.call(
      'GET',
      `/v1/leases/${leaseId}/kubeconfig`,
      stack.buyer.token,
    );
    expect(kubeconfig.status).toBe(200);
    const balance = await stack.balance();

    // The backup, taken while the market runs (one consistent snapshot).
    const dump = join(stack.dir, 'gpux.dump');
    execFileSync('pg_dump', ['--format=custom', '--file', dump, stack.database.url]);

    // The restore: a new database, then the exchange on it with the same key
    // and a stream of its own (JetStream's content is derived from the outbox).
    restored = await createDatabase(uniqueDatabaseName('gpux_restored'));
    execFileSync('pg_restore', ['--no-owner', '--dbname', restored.url, dump]);
    await stack.stopAgent();
    await stack.stopExchange();
    second = await startExchangeProcess({
      ...stack.exchangeEnv(),
      DATABASE_URL: restored.url,
      GPUX_NATS_STREAM: `${stack.natsStream}_RESTORED`,
      GPUX_NATS_SUBJECT_ROOT: `${stack.natsSubjectRoot}r`,
    });

    const lease = await get(second.url, `/v1/leases/${leaseId}`, stack.buyer.token);
    expect(lease.status).toBe(200);
    expect(((await lease.json()) as { status: string }).status).toBe('active');
    const again = await get(second.url, `/v1/leases/${leaseId}/kubeconfig`, stack.buyer.token);
    expect(again.status).toBe(200);
    expect(await again.text()).toBe(kubeconfig.text);
    const account = await get(second.url, '/v1/account', stack.buyer.token);
    expect(((await account.json()) as { balance: number }).balance).toBe(balance);
  });

  it('under another key the restored exchange refuses to start, saying why in one line', async () => {
    await second?.stop('SIGTERM');
    second = undefined;
    await expect(
      startExchangeProcess({
        ...stack.exchangeEnv(),
        DATABASE_URL: restored?.url ?? '',
        GPUX_SECRET_KEY: randomBytes(32).toString('base64'),
      }),
    ).rejects.toThrow(/GPUX_SECRET_KEY opens none of the \d+ newest stored kubeconfigs/);
  });
});
