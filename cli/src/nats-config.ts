// `gpux nats-config --out DIR [--cluster cls_…]…`: the NATS users of the
// exchange and of the agents, kept in one directory the operator names
// (deploy/nats/README.md). The first run (no cluster needed) makes the
// exchange's seed, so NATS can run with authorization before any cluster
// exists; each later run into the same directory keeps every seed there and
// adds only the new clusters', then writes the server's authorization block
// anew, so a server reload admits the new agent and no one else restarts.
//
// The directory is a required flag, not a default: it holds the market's
// NATS secrets and is the state every later run reads, so it must be a
// place the operator chose (a default used to be the current directory, a
// checkout; a run into another directory minted new keys for everyone).

import { readdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

import { agentPermissions, authorizationBlock, exchangePermissions } from '@gpux/exchange';
import type { NatsUser } from '@gpux/exchange';
import { isId } from '@gpux/shared';
import { createUser, fromSeed } from '@nats-io/nkeys';

export interface NatsConfigResult {
  readonly exitCode: number;
  readonly stdout: string;
  readonly stderr: string;
}

export const USAGE = `usage: gpux nats-config --out DIR [--cluster cls_… …]

The NATS users of the exchange and of the agents of these clusters, in DIR
(an existing directory, mode 0700: it holds secrets; deploy/nats/README.md):

  exchange.nk          the exchange's nkey seed (its NATS_CREDS)
  <cls_…>.nk           each cluster's agent seed (its NATS_CREDS: hand it to
                       that cluster's provider, and nothing else)
  authorization.conf   the server's users and permissions: the exchange and
                       every cluster with a seed in DIR
  nats-server.conf     a server configuration that includes it (only when
                       absent: yours to edit)

A seed already in DIR is kept, never replaced; only missing ones are made
(mode 0600, never printed). authorization.conf is written anew each run.
The first run needs no cluster; add one later with the same DIR, then
reload the server (nats-server --signal reload): the exchange and the other
agents keep their seeds and connections.
`;

export const AUTHORIZATION_FILE = 'authorization.conf';
export const SERVER_FILE = 'nats-server.conf';
export const EXCHANGE_SEED = 'exchange.nk';

/** What nats-server.conf holds when nats-config writes it (deploy/nats/nats-server.conf). */
export const SERVER_CONF = `# nats-server.conf for gpux (NATS 2.9 or later, JetStream on), first written
# by \`gpux nats-config\`, which never writes it again: yours to edit (port,
# TLS: deploy/nats/README.md). The users are in authorization.conf beside
# it, which nats-config writes anew whenever a cluster is added; then reload
# the server (nats-server --signal reload).

port: 4222
jetstream {
  store_dir: "/var/lib/nats-server"
}

include "${AUTHORIZATION_FILE}"
`;

class Refusal extends Error {}

const fail = (exitCode: number, line: string): NatsConfigResult => ({
  exitCode,
  stdout: '',
  stderr: `gpux nats-config: ${line}\n`,
});

/** An fs error as a few words: "permission denied", not a stack. */
function reason(err: unknown): string {
  const message = err instanceof Error ? err.message : String(err);
  return /^[A-Z]+: (.*?), \w+ '/.exec(message)?.[1] ?? message;
}

interface Seed {
  readonly file: string;
  readonly publicKey: string;
  readonly made: boolean;
}

/** The seed already in `file`, checked; undefined when there is none. */
function readSeed(file: string): Seed | undefined {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new Refusal(`cannot read ${file}: ${reason(err)}`);
  }
  const seed = text.trim();
  try {
    if (!seed.startsWith('SU')) throw new Error('not a user seed');
    return {
      file,
      publicKey: fromSeed(new TextEncoder().encode(seed)).getPublicKey(),
      made: false,
    };
  } catch {
    throw new Refusal(
      `${file} holds no user nkey seed (SU…): restore it, or remove it for a new one`,
    );
  }
}

/** A new seed in `file`: 0600, and never over an existing file. */
function makeSeed(file: string): Seed {
  const key = createUser();
  try {
    writeFileSync(file, `${new TextDecoder().decode(key.getSeed())}\n`, {
      mode: 0o600,
      flag: 'wx',
    });
  } catch (err) {
    throw new Refusal(`cannot write ${file}: ${reason(err)}`);
  }
  return { file, publicKey: key.getPublicKey(), made: true };
}

/** Written whole, then renamed: a server reloading never reads half a file. */
function replaceFile(file: string, text: string): void {
  const partial = `${file}.${process.pid}.tmp`;
  try {
    writeFileSync(partial, text, { mode: 0o644 });
    renameSync(partial, file);
  } catch (err) {
    throw new Refusal(`cannot write ${file}: ${reason(err)}`);
  }
}

/** Writes `file` unless it exists; whether it did. */
function writeIfAbsent(file: string, text: string): boolean {
  try {
    writeFileSync(file, text, { mode: 0o644, flag: 'wx' });
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw new Refusal(`cannot write ${file}: ${reason(err)}`);
  }
}

/** The cluster ids of the seeds in `dir`. */
function clustersIn(dir: string): string[] {
  let entries: string[];
  try {
    if (!statSync(dir).isDirectory()) throw new Refusal(`${dir} is not a directory`);
    entries = readdirSync(dir);
  } catch (err) {
    if (err instanceof Refusal) throw err;
    throw new Refusal(`cannot use ${dir}: ${reason(err)} (make it first, mode 0700)`);
  }
  return entries.flatMap((f) => {
    const id = f.slice(0, -'.nk'.length);
    return f.endsWith('.nk') && isId('cls_', id) ? [id] : [];
  });
}

function parse(args: readonly string[]): { out: string; clusters: string[] } | NatsConfigResult {
  const clusters: string[] = [];
  let out: string | undefined;
  for (let i = 0; i < args.length; i++) {
    const a = args[i] ?? '';
    const v = args[i + 1];
    if (a === '--help' || a === '-h') return { exitCode: 0, stdout: USAGE, stderr: '' };
    if (a !== '--cluster' && a !== '--out') {
      return fail(2, `unknown argument ${a} (gpux nats-config --help)`);
    }
    if (v === undefined || v === '') return fail(2, `${a} needs a value (gpux nats-config --help)`);
    i++;
    if (a === '--out') out = v;
    else if (isId('cls_', v)) {
      if (!clusters.includes(v)) clusters.push(v);
    } else return fail(2, `not a cluster id: ${args[i]} (cls_… from POST /v1/admin/clusters)`);
  }
  if (out === undefined) {
    return fail(
      2,
      '--out DIR is required: the directory of the NATS seeds (gpux nats-config --help)',
    );
  }
  return { out: resolve(out), clusters };
}

export function natsConfig(args: readonly string[]): NatsConfigResult {
  const parsed = parse(args);
  if ('exitCode' in parsed) return parsed;
  const { out, clusters } = parsed;
  try {
    const all = [...new Set([...clustersIn(out), ...clusters])].sort();
    const files = new Map([
      ['', join(out, EXCHANGE_SEED)],
      ...all.map((c): [string, string] => [c, join(out, `${c}.nk`)]),
    ]);
    // Every seed there is read and checked before anything is written.
    const found = new Map([...files].map(([who, file]) => [who, readSeed(file)]));
    const seeds = new Map([...files].map(([who, file]) => [who, found.get(who) ?? makeSeed(file)]));
    const seed = (who: string): Seed => seeds.get(who) as Seed;
    const users: NatsUser[] = [
      {
        nkey: seed('').publicKey,
        permissions: exchangePermissions(),
        comment: `the exchange (seed in ${EXCHANGE_SEED})`,
      },
      ...all.map((c) => ({
        nkey: seed(c).publicKey,
        permissions: agentPermissions(c),
        comment: `agent of ${c} (seed in ${c}.nk)`,
      })),
    ];
    const conf = join(out, AUTHORIZATION_FILE);
    replaceFile(
      conf,
      `# Written by \`gpux nats-config\`: do not edit, run it again.\n${authorizationBlock(users)}`,
    );
    const server = join(out, SERVER_FILE);
    const serverMade = writeIfAbsent(server, SERVER_CONF);
    const exchange = seed('');
    const lines = [
      exchange.made
        ? `${exchange.file}: new seed of the exchange (its NATS_CREDS)`
        : `${exchange.file}: kept (the exchange's seed: no restart needed)`,
      ...clusters.map((c) =>
        seed(c).made
          ? `${seed(c).file}: new seed of the agent of ${c} (its NATS_CREDS: hand it to that provider)`
          : `${seed(c).file}: kept (the agent of ${c} already had a seed)`,
      ),
      `${conf}: the exchange and ${all.length} cluster${all.length === 1 ? '' : 's'}` +
        (serverMade ? '' : ' (reload the server: nats-server --signal reload)'),
      ...(serverMade ? [`${server}: new (start the server: nats-server -c ${server})`] : []),
    ];
    return { exitCode: 0, stdout: `${lines.join('\n')}\n`, stderr: '' };
  } catch (err) {
    return fail(1, err instanceof Refusal ? err.message : reason(err));
  }
}
