import {
  chmodSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { fromSeed } from '@nats-io/nkeys';
import { afterAll, describe, expect, it } from 'vitest';

import { SERVER_CONF, USAGE, natsConfig } from './nats-config.js';

const A = 'cls_01m84vfhv8jbh8rbvv0x0000aa';
const B = 'cls_01m84vfhv8jbh8rbvv0x0000bb';
const C = 'cls_01m84vfhv8jbh8rbvv0x0000cc';

const root = mkdtempSync(join(tmpdir(), 'gpux-nats-config-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
let dirs = 0;
function newDir(): string {
  const d = join(root, `keys-${++dirs}`);
  mkdirSync(d, { mode: 0o700 });
  return d;
}

const read = (dir: string, file: string): string => readFileSync(join(dir, file), 'utf8');
const publicKey = (seed: string): string =>
  fromSeed(new TextEncoder().encode(seed.trim())).getPublicKey();
/** The public nkeys authorization.conf lists, in order. */
const listed = (dir: string): string[] =>
  [...read(dir, 'authorization.conf').matchAll(/nkey: "(U[A-Z2-7]{55})"/g)].map((m) => m[1] ?? '');
const seedsIn = (dir: string): string[] => readdirSync(dir).filter((f) => f.endsWith('.nk'));

function ok(args: string[]): string {
  const r = natsConfig(args);
  expect(r.stderr).toBe('');
  expect(r.exitCode).toBe(0);
  return r.stdout;
}

/** One line on stderr, no stack, a non-zero exit. */
function refused(args: string[], code: number, why: RegExp): void {
  const r = natsConfig(args);
  expect(r.exitCode).toBe(code);
  expect(r.stdout).toBe('');
  expect(r.stderr).toMatch(/^gpux nats-config: [^\n]+\n$/);
  expect(r.stderr).toMatch(why);
  expect(r.stderr).not.toMatch(/\bat .*:\d+:\d+/);
}

describe('gpux nats-config (deploy/nats/README.md)', () => {
  it('with no cluster: the exchange seed (0600), authorization.conf with the exchange, nats-server.conf', () => {
    const dir = newDir();
    const out = ok(['--out', dir]);
    expect(seedsIn(dir)).toEqual(['exchange.nk']);
    const seed = read(dir, 'exchange.nk');
    expect(seed).toMatch(/^SU[A-Z2-7]{56}\n$/);
    expect(statSync(join(dir, 'exchange.nk')).mode & 0o777).toBe(0o600);
    expect(listed(dir)).toEqual([publicKey(seed)]);
    expect(read(dir, 'authorization.conf')).toContain('"$JS.API.>"');
    expect(read(dir, 'nats-server.conf')).toBe(SERVER_CONF);
    expect(SERVER_CONF).toContain('include "authorization.conf"');
    // What was written where, and never a seed.
    expect(out).toContain(`${join(dir, 'exchange.nk')}: new seed of the exchange`);
    expect(out).toContain(`${join(dir, 'authorization.conf')}: the exchange and 0 clusters`);
    expect(out).toContain(`nats-server -c ${join(dir, 'nats-server.conf')}`);
    expect(out).not.toContain(seed.trim());
    expect(out.split('\n').length).toBeLessThanOrEqual(5);
  });

  it('adding clusters to the same directory keeps every seed byte for byte and lists them all', () => {
    const dir = newDir();
    ok(['--out', dir]);
    const exchange = read(dir, 'exchange.nk');
    const out = ok(['--cluster', A, '--out', dir]);
    expect(out).toContain(`${join(dir, `${A}.nk`)}: new seed of the agent of ${A}`);
    expect(out).toContain("exchange.nk: kept (the exchange's seed: no restart needed)");
    expect(out).toContain('nats-server --signal reload');
    const a = read(dir, `${A}.nk`);
    expect(statSync(join(dir, `${A}.nk`)).mode & 0o777).toBe(0o600);
    // The operator's edits to nats-server.conf survive.
    writeFileSync(join(dir, 'nats-server.conf'), `${SERVER_CONF}\n# mine\n`);
    const out2 = ok(['--out', dir, '--cluster', B, '--cluster', C]);
    expect(read(dir, 'exchange.nk')).toBe(exchange);
    expect(read(dir, `${A}.nk`)).toBe(a);
    expect(read(dir, 'nats-server.conf')).toBe(`${SERVER_CONF}\n# mine\n`);
    expect(seedsIn(dir).sort()).toEqual([`${A}.nk`, `${B}.nk`, `${C}.nk`, 'exchange.nk']);
    const [b, c] = [read(dir, `${B}.nk`), read(dir, `${C}.nk`)];
    expect(new Set([exchange, a, b, c]).size).toBe(4);
    expect(listed(dir)).toEqual([exchange, a, b, c].map(publicKey));
    const conf = read(dir, 'authorization.conf');
    for (const id of [A, B, C]) {
      expect(conf).toContain(`"$JS.API.CONSUMER.MSG.NEXT.GPUX_EVENTS.agent_${id}"`);
    }
    for (const seed of [exchange, a, b, c]) {
      expect(conf).not.toContain(seed.trim());
      expect(out2).not.toContain(seed.trim());
    }
    expect(out2).toContain(`the exchange and 3 clusters`);
    // No cluster named: the configuration again, every seed kept.
    ok(['--out', dir]);
    expect(listed(dir)).toEqual([exchange, a, b, c].map(publicKey));
  });

  it('a cluster added again keeps its seed: no error, the same configuration', () => {
    const dir = newDir();
    ok(['--out', dir, '--cluster', A]);
    const [exchange, a] = [read(dir, 'exchange.nk'), read(dir, `${A}.nk`)];
    const conf = read(dir, 'authorization.conf');
    const out = ok(['--out', dir, '--cluster', A, '--cluster', A]);
    expect(out).toContain(`${join(dir, `${A}.nk`)}: kept (the agent of ${A} already had a seed)`);
    expect([read(dir, 'exchange.nk'), read(dir, `${A}.nk`)]).toEqual([exchange, a]);
    expect(read(dir, 'authorization.conf')).toBe(conf);
  });

  it('a missing, unusable or unwritable directory: one line, a non-zero exit, nothing written', () => {
    const missing = join(root, 'nowhere');
    refused(['--out', missing], 1, /cannot use .*nowhere: no such file or directory/);
    const file = join(root, 'a-file');
    writeFileSync(file, '');
    refused(['--out', file, '--cluster', A], 1, /a-file is not a directory/);
    // /sys refuses new files even to root.
    refused(['--out', '/sys'], 1, /cannot write \/sys\/exchange\.nk: permission denied/);
    if (process.getuid?.() !== 0) {
      const locked = newDir();
      chmodSync(locked, 0o500);
      refused(['--out', locked], 1, /permission denied/);
    }
  });

  it('a seed file that holds no seed: one line, and no new seed or configuration', () => {
    const dir = newDir();
    ok(['--out', dir, '--cluster', A]);
    writeFileSync(join(dir, `${A}.nk`), 'not a seed\n');
    const conf = read(dir, 'authorization.conf');
    refused(['--out', dir, '--cluster', B], 1, new RegExp(`${A}\\.nk holds no user nkey seed`));
    expect(seedsIn(dir).sort()).toEqual([`${A}.nk`, 'exchange.nk']);
    expect(read(dir, 'authorization.conf')).toBe(conf);
  });

  it('refuses bad arguments in one line; --help prints the usage and exits 0', () => {
    refused([], 2, /--out DIR is required/);
    refused(['--cluster', A], 2, /--out DIR is required/);
    refused(['--out', root, '--cluster', 'alpha'], 2, /not a cluster id: alpha/);
    refused(['--bogus'], 2, /unknown argument --bogus/);
    refused(['--out'], 2, /--out needs a value/);
    for (const help of ['--help', '-h']) {
      expect(natsConfig([help])).toEqual({ exitCode: 0, stdout: USAGE, stderr: '' });
      expect(natsConfig(['--out', root, help]).exitCode).toBe(0);
    }
    expect(USAGE).toMatch(/^usage: gpux nats-config --out DIR/);
  });

  it('writes what deploy/nats/nats-server.conf shows', () => {
    const shipped = fileURLToPath(new URL('../../deploy/nats/nats-server.conf', import.meta.url));
    expect(readFileSync(shipped, 'utf8')).toBe(SERVER_CONF);
  });
});
