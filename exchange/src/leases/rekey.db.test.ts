// D28 key rotation (docs/operations.md, "Rotating the secret key"): with
// GPUX_SECRET_KEY=new,old every stored kubeconfig opens, rekey seals the old
// ones again under the new key (never over a newer report), after which the
// new key alone opens all; a key that opens nothing stored stops the start.

import { randomBytes } from 'node:crypto';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { testExchange } from '../market/testing/test-exchange.js';
import type { TestExchange } from '../market/testing/test-exchange.js';
import { createEndpoint, openSecret } from '../webhooks/endpoints.js';
import { rekey, rekeyWebhooks } from './rekey.js';
import { SecretBox } from './secret-box.js';
import { SecretKeyError, checkSecretKeys } from './secret-check.js';

let ex: TestExchange;
const OLD = randomBytes(32);
const NEW = randomBytes(32);

beforeAll(async () => {
  ex = await testExchange();
});

afterAll(async () => {
  await ex?.close();
});

async function store(leaseId: string, box: SecretBox, text: string): Promise<void> {
  await ex.db.query(
    `INSERT INTO lease_access (lease_id, ssh_endpoints, ssh_host_keys, kubeconfig_sealed, reported_ms)
     VALUES ($1, '[]', '[]', $2, $3)
     ON CONFLICT (lease_id) DO UPDATE SET kubeconfig_sealed = $2`,
    [leaseId, box.seal(text, leaseId), Date.now()],
  );
}

async function sealed(leaseId: string): Promise<Uint8Array> {
  const [row] = await ex.db.query<{ kubeconfig_sealed: Uint8Array }>(
    'SELECT kubeconfig_sealed FROM lease_access WHERE lease_id = $1',
    [leaseId],
  );
  if (row === undefined) throw new Error(`no access row for ${leaseId}`);
  return row.kubeconfig_sealed;
}

describe('rotating GPUX_SECRET_KEY', () => {
  it('the start check: the right key passes, a key that opens nothing stored stops it', async () => {
    await store('lea_rot_1', new SecretBox(OLD), 'kubeconfig 1');
    await store('lea_rot_2', new SecretBox(OLD), 'kubeconfig 2');
    await expect(checkSecretKeys(ex.db, new SecretBox(OLD))).resolves.toMatchObject({
      opened: 2,
      underOlderKey: 0,
    });
    const wrong = checkSecretKeys(ex.db, new SecretBox(NEW));
    await expect(wrong).rejects.toThrow(SecretKeyError);
    await expect(wrong).rejects.toThrow(/opens none of the 2 newest stored kubeconfigs/);
    // new,old: all open, all under the older key.
    await expect(checkSecretKeys(ex.db, new SecretBox([NEW, OLD]))).resolves.toMatchObject({
      opened: 2,
      underOlderKey: 2,
    });
  });

  it('rekey seals every kubeconfig again under the newest key; then the new key alone opens them', async () => {
    const both = new SecretBox([NEW, OLD]);
    await store('lea_rot_3', both, 'kubeconfig 3'); // already under the new key
    const r = await rekey(ex.db, both);
    expect(r).toEqual({ resealed: 2, current: 1, unreadable: [] });
    const alone = new SecretBox(NEW);
    for (const [id, text] of [
      ['lea_rot_1', 'kubeconfig 1'],
      ['lea_rot_2', 'kubeconfig 2'],
      ['lea_rot_3', 'kubeconfig 3'],
    ] as const) {
      expect(alone.open(await sealed(id), id)).toBe(text);
    }
    const resealed = await sealed('lea_rot_1');
    expect(() => new SecretBox(OLD).open(resealed, 'lea_rot_1')).toThrow();
    // A second run has nothing left to do.
    expect(await rekey(ex.db, both)).toEqual({ resealed: 0, current: 3, unreadable: [] });
  });

  it('names what opens under none of the keys (dropping a key would lose it)', async () => {
    await store('lea_rot_4', new SecretBox(randomBytes(32)), 'kubeconfig 4');
    const r = await rekey(ex.db, new SecretBox([NEW, OLD]));
    expect(r.unreadable).toEqual(['lea_rot_4']);
    await ex.db.query("DELETE FROM lease_access WHERE lease_id LIKE 'lea_rot_%'");
  });

  it('reseals webhook signing secrets too (issue 22), which then open under the new key alone', async () => {
    const owner = await ex.party('rekey-webhooks');
    const { row, secret } = await createEndpoint(
      ex.db,
      new SecretBox(OLD),
      owner.accountId,
      'https://hooks.example.com/gpux',
      ['order.filled'],
      Date.now(),
    );
    const both = new SecretBox([NEW, OLD]);
    await expect(rekeyWebhooks(ex.db, both)).resolves.toMatchObject({ unreadable: [] });
    const [stored] = await ex.db.query<{ id: string; secret_sealed: string }>(
      'SELECT id, secret_sealed FROM webhook_endpoints WHERE id = $1',
      [row.id],
    );
    if (stored === undefined) throw new Error('the endpoint is gone');
    expect(openSecret(new SecretBox(NEW), stored)).toBe(secret);
    await expect(rekeyWebhooks(ex.db, both)).resolves.toMatchObject({ resealed: 0 });
  });
});
