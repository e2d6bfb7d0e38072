#!/usr/bin/env node
// The one gpux command (docs/architecture.md): the only package that imports both
// the exchange and the agent, which never import each other.

import { runAgent } from '@gpux/agent';
import { runExchange, runRekey } from '@gpux/exchange';

import { natsConfig } from './nats-config.js';
import { runStart } from './start.js';

export const USAGE = `usage: gpux <command> [--help]

  start          the whole market in one process on embedded defaults: the
                 exchange and a simulated agent on the demo cluster (npm start)
  exchange       the exchange
  agent          a provider's agent
  nats-config    the NATS users and permissions of the exchange and agents,
                 seeds in --out DIR
  rekey          seal every stored kubeconfig again under the newest key of
                 GPUX_SECRET_KEY (rotating the key)

gpux <command> --help lists the command's settings and flags and exits.
`;

const [command, ...rest] = process.argv.slice(2);
switch (command) {
  case 'start':
    await runStart(rest);
    break;
  case 'exchange':
    await runExchange(rest);
    break;
  case 'agent':
    await runAgent(rest);
    break;
  case 'rekey':
    process.exitCode = await runRekey(rest);
    break;
  case 'nats-config': {
    const r = natsConfig(rest);
    process.stdout.write(r.stdout);
    process.stderr.write(r.stderr);
    process.exitCode = r.exitCode;
    break;
  }
  case undefined:
  case '--help':
  case '-h':
  case 'help':
    process.stdout.write(USAGE);
    break;
  default:
    process.stderr.write(`gpux: no command ${command}\n${USAGE}`);
    process.exitCode = 2;
}
