import { execFileSync } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { parsePublicKey } from '../accounts/ssh-keys.js';
import { buildApp } from '../app.js';
import { Market } from '../market/market.js';
import { migrate } from '../db/migrate.js';
import { freshPostgres } from '../db/testing/fresh-database.js';
import type { FreshDatabase } from '../db/testing/fresh-database.js';

const ADMIN = 'test-admin-token-0123456789';

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

describe('parsePublicKey (D32)', () => {
  it("gives OpenSSH's own fingerprint (checked with ssh-keygen -lf)", () => {
    const line = ed25519Line();
    const file = join(mkdtempSync(join(tmpdir(), 'gpux-key-')), 'id.pub');
    writeFileSync(file, `${line}\n`);
    const out = execFileSync('ssh-keygen', ['-lf', file], { encoding: 'utf8' });
    expect(out.split(' ')[1]).toBe(parsePublicKey(line).fingerprint);
  });

  it.each([['rsa'], ['ecdsa'], ['ed25519']])(
    'reads a %s key made by ssh-keygen, with the same fingerprint',
    (type) => {
      const file = join(mkdtempSync(join(tmpdir(), 'gpux-key-')), 'id');
      execFileSync('ssh-keygen', ['-q', '-t', type, '-N', '', '-C', 'test', '-f', file]);
      const line = readFileSync(`${file}.pub`, 'utf8');
      const out = execFileSync('ssh-keygen', ['-lf', `${file}.pub`], { encoding: 'utf8' });
      expect(parsePublicKey(line).fingerprint).toBe(out.split(' ')[1]);
    },
  );

  it.each([
    ['a private key', '-----BEGIN OPENSSH PRIVATE KEY-----'],
    ['a DSA key', `ssh-dss ${Buffer.from('x').toString('base64')}`],
    ['a truncated key', ed25519Line().slice(0, 40)],
    ['a relabelled key', ed25519Line().replace(/^ssh-ed25519/, 'ssh-rsa')],
    ['no key data', 'ssh-ed25519'],
    ['data that is not base64', 'ssh-ed25519 not*base64'],
  ])('refuses %s', (_what, line) => {
    expect(() => parsePublicKey(line)).toThrow(/public_key/);
  });
});

let fresh: FreshDatabase;
let market: Market;
let app: FastifyInstance;
let token: string;
let otherToken: string;
let readOnlyToken: string;

async function call(
  method: 'GET' | 'POST' | 'DELETE',
  url: string,
  as: string,
  payload?: Record<string, unknown>,
): Promise<{ status: number; json: Record<string, unknown> }> {
  const res = await app.inject({
    method,
    url,
    headers: { authorization: `Bearer ${as}` },
    ...(payload === undefined ? {} : { payload }),
  });
  return { status: res.statusCode, json: res.json<Record<string, unknown>>() };
}

beforeAll(async () => {
  fresh = await freshPostgres();
  await migrate(fresh.db);
  market = await Market.open(fresh.db, { tickIntervalMs: 0 });
  app = buildApp({ logLevel: 'silent' }, { db: fresh.db, adminToken: ADMIN, market });
  const make = async (name: string, scopes: string[]): Promise<string> =>
    (await call('POST', '/v1/admin/accounts', ADMIN, { name, organization: name, scopes })).json[
      'token'
    ] as string;
  token = await make('alice', ['read', 'leases']);
  otherToken = await make('bob', ['read', 'leases']);
  readOnlyToken = await make('carol', ['read']);
});

afterAll(async () => {
  await app.close();
  await fresh.drop();
});

describe('/v1/ssh_keys (D32)', () => {
  it('registers, lists newest first and deletes keys', async () => {
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

  it('refuses the same key twice for one account, and a malformed key', async () => {
    const line = ed25519Line();
    expect(
      (await call('POST', '/v1/ssh_keys', token, { name: 'a', public_key: line })).status,
    ).toBe(201);
    const again = await call('POST', '/v1/ssh_keys', token, { name: 'b', public_key: line });
    expect(again.status).toBe(400);
    expect(again.json).toMatchObject({ error: { code: 'invalid_request' } });
    const bad = await call('POST', '/v1/ssh_keys', token, { name: 'c', public_key: 'hello' });
    expect(bad.json).toMatchObject({ data: null, error: { code: 'invalid_request' } });
  });

  it("D24: another account's key is 404, never 403, and stays", async () => {
    const mine = await call('POST', '/v1/ssh_keys', token, {
      name: 'x',
      public_key: ed25519Line(),
    });
    const id = mine.json['ssh_key_id'] as string;
    const theirs = await call('DELETE', `/v1/ssh_keys/${id}`, otherToken);
    expect(theirs.status).toBe(404);
    expect(theirs.json).toMatchObject({ error: { code: 'not_found' } });
    expect((await call('GET', '/v1/ssh_keys', otherToken)).json).toEqual({ ssh_keys: [] });
  });

  it('D24: adding or deleting a key needs the leases scope', async () => {
    const r = await call('POST', '/v1/ssh_keys', readOnlyToken, {
      name: 'x',
      public_key: ed25519Line(),
    });
    expect(r.status).toBe(403);
    expect((await call('GET', '/v1/ssh_keys', readOnlyToken)).status).toBe(200);
  });
});
