// The /v1/ssh_keys API (D32) on PostgreSQL. Parsing and checking a key is
// unit-tested beside the parser (accounts/ssh-keys.test.ts).

import { generateKeyPairSync } from 'node:crypto';
import { readFileSync } from 'node:fs';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { testExchange } from '../market/testing/test-exchange.js';
import type { TestExchange } from '../market/testing/test-exchange.js';

/** A fresh ed25519 public key in OpenSSH's one-line form. */
function ed25519Line(comment = 'me@laptop'): string {
  const { publicKey } = generateKeyPairSync('ed25519');
  const raw = publicKey.export({ format: 'der', type: 'spki' }).subarray(-32);
  const field = (b: Buffer): Buffer => {
    const len = Buffer.alloc(4);
    len.writeUInt32BE(b.length);
    return Buffer.concat([len, b]);
  };
  const blob = Buffer.concat([field(Buffer.from('ssh-ed25519')), field(raw)]);
  return `ssh-ed25519 ${blob.toString('base64')} ${comment}`;
}

/** A public key made by ssh-keygen, checked in (accounts/testing/ssh-keys/). */
function fixtureKey(file: string): string {
  return readFileSync(new URL(`../accounts/testing/ssh-keys/${file}`, import.meta.url), 'utf8');
}

let ex: TestExchange;

beforeAll(async () => {
  ex = await testExchange();
});

afterAll(async () => {
  await ex.close();
});

let accounts = 0;
/** An account of its own for each test: nothing any other test did shows in its lists. */
async function newAccount(scopes: ('read' | 'leases')[] = ['read', 'leases']): Promise<string> {
  accounts++;
  return (await ex.account(`keys-${accounts}`, { scopes })).token;
}

async function call(
  method: 'GET' | 'POST' | 'DELETE',
  url: string,
  as: string,
  payload?: Record<string, unknown>,
): Promise<{ status: number; json: Record<string, unknown> }> {
  const r = await ex.call(method, url, as, payload);
  return { status: r.status, json: r.json };
}

describe('/v1/ssh_keys (D32)', () => {
  it('registers, lists newest first and deletes keys', async () => {
    const token = await newAccount();
    const first = await call('POST', '/v1/ssh_keys', token, {
      name: 'laptop',
      public_key: ed25519Line(),
    });
    expect(first.status).toBe(201);
    expect(first.json).toMatchObject({ name: 'laptop', type: 'ssh-ed25519' });
    expect(first.json['ssh_key_id']).toMatch(/^key_/);
    expect(first.json['fingerprint']).toMatch(/^SHA256:[A-Za-z0-9+/]{43}$/);
    expect(first.json['public_key']).not.toContain('laptop'); // the comment is not kept
    const second = await call('POST', '/v1/ssh_keys', token, {
      name: 'ci',
      public_key: ed25519Line(),
    });
    const list = await call('GET', '/v1/ssh_keys', token);
    expect((list.json['ssh_keys'] as { name: string }[]).map((k) => k.name)).toEqual([
      'ci',
      'laptop',
    ]);
    const del = await call('DELETE', `/v1/ssh_keys/${second.json['ssh_key_id'] as string}`, token);
    expect(del).toEqual({
      status: 200,
      json: { ssh_key_id: second.json['ssh_key_id'], deleted: true },
    });
    const after = await call('GET', '/v1/ssh_keys', token);
    expect((after.json['ssh_keys'] as unknown[]).length).toBe(1);
  });

  it('the same key twice for one account is 409 ssh_key_exists with its id; a malformed key is invalid', async () => {
    const token = await newAccount();
    const line = ed25519Line();
    const first = await call('POST', '/v1/ssh_keys', token, { name: 'a', public_key: line });
    expect(first.status).toBe(201);
    // Issue 24: 409 naming the key already registered, so a program can go on with it.
    const again = await call('POST', '/v1/ssh_keys', token, { name: 'b', public_key: line });
    expect(again.status).toBe(409);
    expect(again.json).toMatchObject({
      error: {
        code: 'ssh_key_exists',
        field: 'public_key',
        ssh_key_id: first.json['ssh_key_id'],
        fingerprint: first.json['fingerprint'],
      },
    });
    // Another account may register the same key.
    const other = await call('POST', '/v1/ssh_keys', await newAccount(), {
      name: 'a',
      public_key: line,
    });
    expect(other.status).toBe(201);
    const bad = await call('POST', '/v1/ssh_keys', token, { name: 'c', public_key: 'hello' });
    expect(bad.json).toMatchObject({ data: null, error: { code: 'invalid_request' } });
  });

  it("D24: another account's key is 404, never 403, and stays", async () => {
    const token = await newAccount();
    const otherToken = await newAccount();
    const mine = await call('POST', '/v1/ssh_keys', token, {
      name: 'x',
      public_key: ed25519Line(),
    });
    const id = mine.json['ssh_key_id'] as string;
    const theirs = await call('DELETE', `/v1/ssh_keys/${id}`, otherToken);
    expect(theirs.status).toBe(404);
    expect(theirs.json).toMatchObject({ error: { code: 'not_found' } });
    expect((await call('GET', '/v1/ssh_keys', otherToken)).json).toEqual({ ssh_keys: [] });
    const kept = await call('GET', '/v1/ssh_keys', token);
    expect((kept.json['ssh_keys'] as { ssh_key_id: string }[]).map((k) => k.ssh_key_id)).toEqual([
      id,
    ]);
  });

  it('D24: adding or deleting a key needs the leases scope', async () => {
    const readOnlyToken = await newAccount(['read']);
    const r = await call('POST', '/v1/ssh_keys', readOnlyToken, {
      name: 'x',
      public_key: ed25519Line(),
    });
    expect(r.status).toBe(403);
    expect((await call('GET', '/v1/ssh_keys', readOnlyToken)).status).toBe(200);
  });

  it('refuses an RSA key under 2048 bits with invalid_request, and takes one of 2048', async () => {
    const token = await newAccount();
    const short = await call('POST', '/v1/ssh_keys', token, {
      name: 'old',
      public_key: fixtureKey('rsa-1024.pub'),
    });
    expect(short).toEqual({
      status: 400,
      json: {
        data: null,
        error: {
          code: 'invalid_request',
          message: 'public_key: an RSA key must have at least 2048 bits; this one has 1024',
          // The field and the rule it breaks (docs/api/errors.md).
          field: 'public_key',
          errors: [
            {
              field: 'public_key',
              rule: 'minimum',
              message: 'public_key: an RSA key must have at least 2048 bits; this one has 1024',
              limit: 2048,
            },
          ],
        },
      },
    });
    const ok = await call('POST', '/v1/ssh_keys', token, {
      name: 'rsa',
      public_key: fixtureKey('rsa-2048.pub'),
    });
    expect(ok.status).toBe(201);
    // The fingerprint ssh-keygen -lf printed for this key (accounts/testing/ssh-keys/).
    expect(ok.json).toMatchObject({
      type: 'ssh-rsa',
      fingerprint: 'SHA256:hORFSQP/umP+lmnOcDbZXPbL9ulSb8Z8v58mHw05k8c',
    });
    expect((await call('GET', '/v1/ssh_keys', token)).json['ssh_keys']).toHaveLength(1);
  });
});
