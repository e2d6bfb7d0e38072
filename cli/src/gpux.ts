#!/usr/bin/env node
// The one gpux command (docs/architecture.md, docs/cli.md): the programs'
// commands (`gpux exchange`, `gpux agent`, …), which parse their own
// arguments and are the only ones loading the exchange and the agent, and
// the commands of the exchange's API (cli/src/client/), which use nothing
// but the API. Each kind is loaded only when one of its commands runs.

import { SERVER_COMMANDS } from './server-commands.js';

let argv = process.argv.slice(2);
// `gpux help <command> …` is `gpux <command> … --help`.
if (argv[0] === 'help' && argv.length > 1) argv = [...argv.slice(1), '--help'];

const program = SERVER_COMMANDS.find((c) => c.name === argv[0]);
if (program !== undefined) {
  await program.run(argv.slice(1));
} else {
  const { runClient } = await import('./client/program.js');
  const { processIo } = await import('./client/process-io.js');
  process.exitCode = await runClient(argv, processIo(), SERVER_COMMANDS);
}
