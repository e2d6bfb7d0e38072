import { runCli } from './cli.js';

const { exitCode, stdout, stderr } = runCli(process.argv.slice(2));
process.stdout.write(stdout);
process.stderr.write(stderr);
process.exitCode = exitCode;
