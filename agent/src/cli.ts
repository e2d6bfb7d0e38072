/** What the command line asks for before any setting is read; pure, so it is testable without a process. */
import { helpText } from './settings.js';

export interface CliResult {
  readonly exitCode: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** `--help` answers at once; undefined: start the agent with these arguments as flags. */
export function runCli(args: readonly string[]): CliResult | undefined {
  if (args.includes('--help') || args.includes('-h')) {
    return { exitCode: 0, stdout: helpText(), stderr: '' };
  }
  return undefined;
}
