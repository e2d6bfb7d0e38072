// `gpux nats-config --cluster cls_… [--cluster …] [--out DIR]`: the
// `authorization` block of nats-server.conf for the exchange and the agents
// of these clusters (deploy/nats/README.md), each with a new nkey whose seed
// is written to DIR/<name>.nk (mode 0600) and never printed.

import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { agentPermissions, authorizationBlock, exchangePermissions } from '@gpux/exchange';
import type { NatsUser } from '@gpux/exchange';
import { isId } from '@gpux/shared';
import { createUser } from '@nats-io/nkeys';

export interface NatsConfigResult {
  readonly exitCode: number;
  readonly stdout: string;
  readonly stderr: string;
}

const USAGE = 'usage: gpux nats-config --cluster cls_… [--cluster cls_…] [--out DIR]\n';

export function natsConfig(
  args: readonly string[],
  writeSeed: (file: string, seed: string) => void = (file, seed) =>
    writeFileSync(file, `${seed}\n`, { mode: 0o600, flag: 'wx' }),
): NatsConfigResult {
  const clusters: string[] = [];
  let out = '.';
  for (let i = 0; i < args.length; i++) {
    const a = args[i];
    const v = args[i + 1];
    if ((a === '--cluster' || a === '--out') && v !== undefined) {
      if (a === '--cluster') clusters.push(v);
      else out = v;
      i++;
    } else {
      return {
        exitCode: 2,
        stdout: '',
        stderr: `gpux nats-config: unknown argument ${a ?? ''}\n${USAGE}`,
      };
    }
  }
  const bad = clusters.filter((c) => !isId('cls_', c));
  if (clusters.length === 0 || bad.length > 0) {
    const why = bad.length > 0 ? `not a cluster id: ${bad.join(', ')}\n` : '';
    return { exitCode: 2, stdout: '', stderr: `gpux nats-config: ${why}${USAGE}` };
  }
  const users: NatsUser[] = [];
  const add = (name: string, permissions: NatsUser['permissions'], comment: string): void => {
    const key = createUser();
    writeSeed(join(out, `${name}.nk`), new TextDecoder().decode(key.getSeed()));
    users.push({
      nkey: key.getPublicKey(),
      permissions,
      comment: `${comment} (seed in ${name}.nk)`,
    });
  };
  add('exchange', exchangePermissions(), 'the exchange');
  for (const c of clusters) add(c, agentPermissions(c), `agent of ${c}`);
  return { exitCode: 0, stdout: authorizationBlock(users), stderr: '' };
}
