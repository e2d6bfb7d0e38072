// An operator's NATS onboarding as deploy/nats/README.md walks it, with the
// real `gpux nats-config` and a private nats-server: the first run, with no
// cluster yet, is enough to start the server with authorization and the
// exchange with its seed; a cluster added later into the same directory,
// then `nats-server --signal reload=<pid>`, lets the new agent in while the
// exchange keeps its seed and its connection.

import { execFile, execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

import { jetstream } from '@nats-io/jetstream';
import { connect, nkeyAuthenticator } from '@nats-io/transport-node';
import type { NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { JetStreamPublisher, SILENT_LOGGER } from '@gpux/exchange';
import type { Logger } from '@gpux/exchange';
import { SUBJECTS, agentConsumerName, agentInboxPrefix, newId } from '@gpux/shared';

import { NATS_SERVER, PrivateNats } from './support/nats-server.js';

const root = fileURLToPath(new URL('..', import.meta.url));
const keys = mkdtempSync(join(tmpdir(), 'gpux-nats-keys-'));
const cluster = newId('cls_');
const warnings: string[] = [];
const recording: Logger = {
  ...SILENT_LOGGER,
  warn: (_o: unknown, msg?: string) => void warnings.push(msg ?? ''),
};

let nats: PrivateNats;
let publisher: JetStreamPublisher | undefined;
let agent: NatsConnection | undefined;

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** The gpux command as a process, from its sources (the e2e build has no cli/dist). */
async function gpux(...args: string[]): Promise<Run> {
  try {
    const r = await promisify(execFile)(
      process.execPath,
      ['--import', 'tsx', 'cli/src/gpux.ts', ...args],
      { cwd: root },
    );
    return { code: 0, stdout: r.stdout, stderr: r.stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

const seed = (name: string): Uint8Array =>
  new TextEncoder().encode(readFileSync(join(keys, name), 'utf8').trim());

/** Connects as the cluster's agent does (its seed, its inbox), once. */
function connectAgent(): Promise<NatsConnection> {
  return connect({
    servers: `127.0.0.1:${nats.port}`,
    authenticator: nkeyAuthenticator(seed(`${cluster}.nk`)),
    inboxPrefix: agentInboxPrefix(cluster),
    maxReconnectAttempts: 0,
  });
}

beforeAll(async () => {
  const first = await gpux('nats-config', '--out', keys);
  expect(first, first.stderr).toMatchObject({ code: 0, stderr: '' });
  expect(first.stdout).toContain(`${join(keys, 'exchange.nk')}: new seed of the exchange`);
  // The server's configuration is PrivateNats's own (port, store) with the
  // users nats-config wrote; includes are relative to the including file.
  nats = await PrivateNats.start(`include "../${basename(keys)}/authorization.conf"\n`);
  publisher = await JetStreamPublisher.connect({
    url: nats.url,
    credsFile: join(keys, 'exchange.nk'),
    logger: recording,
  });
  await publisher.publish(SUBJECTS.leaseProvision('cls_nobody'), newId('evt_'), '{}');
}, 60_000);

afterAll(async () => {
  await agent?.close();
  await publisher?.close();
  await nats?.stop();
  rmSync(keys, { recursive: true, force: true });
});

describe("an operator's NATS onboarding (deploy/nats/README.md)", () => {
  it('gpux nats-config --help prints the usage; a problem is one line and a non-zero exit', async () => {
    const help = await gpux('nats-config', '--help');
    expect(help).toMatchObject({ code: 0, stderr: '' });
    expect(help.stdout).toMatch(/^usage: gpux nats-config --out DIR/);
    const bad = await gpux('nats-config', '--out', join(keys, 'nowhere'));
    expect(bad.code).toBe(1);
    expect(bad.stdout).toBe('');
    expect(bad.stderr).toMatch(/^gpux nats-config: cannot use \S+nowhere: no such file[^\n]*\n$/);
  });

  it('a cluster added later and a reload let its agent in; the exchange stays connected', async () => {
    const exchangeSeed = readFileSync(join(keys, 'exchange.nk'), 'utf8');
    const added = await gpux('nats-config', '--out', keys, '--cluster', cluster);
    expect(added, added.stderr).toMatchObject({ code: 0, stderr: '' });
    expect(added.stdout).toContain(`${cluster}.nk: new seed of the agent of ${cluster}`);
    expect(readFileSync(join(keys, 'exchange.nk'), 'utf8')).toBe(exchangeSeed);
    // The exchange makes the agent's consumer at its Attach and publishes.
    await publisher?.ensureAgentConsumer(cluster);
    await publisher?.publish(SUBJECTS.leaseProvision(cluster), newId('evt_'), '{"n":1}');

    // Not before the server reloads its configuration …
    await expect(connectAgent()).rejects.toThrow(/authorization/i);
    execFileSync(NATS_SERVER, ['--signal', `reload=${nats.pid ?? 0}`]);
    // … and then (the reload is asynchronous in the server).
    for (let i = 0; agent === undefined; i++) {
      try {
        agent = await connectAgent();
      } catch (err) {
        if (i === 100) throw err;
        await new Promise((r) => setTimeout(r, 50));
      }
    }
    const consumer = await jetstream(agent).consumers.get(
      'GPUX_EVENTS',
      agentConsumerName(cluster),
    );
    const m = await consumer.next({ expires: 5_000 });
    expect(m?.json()).toEqual({ n: 1 });
    expect(await m?.ackAck()).toBe(true);

    // The exchange's connection was never dropped, and it publishes on.
    await publisher?.publish(SUBJECTS.leaseProvision(cluster), newId('evt_'), '{"n":2}');
    expect((await consumer.next({ expires: 5_000 }))?.json()).toEqual({ n: 2 });
    expect(warnings).toEqual([]);
  });
});
