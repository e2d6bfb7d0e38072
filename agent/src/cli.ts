/** What the agent does for a command line; kept pure so it is testable without a process. */
import { helpText } from './settings.js';

export interface CliResult {
  readonly exitCode: number;
  readonly stdout: string;
  readonly stderr: string;
}

export function runCli(args: readonly string[]): CliResult {
  if (args.includes('--help') || args.includes('-h')) {
    return { exitCode: 0, stdout: helpText(), stderr: '' };
  }
  return {
    exitCode: 1,
    stdout: '',
    stderr: 'gpux agent: not implemented yet (see --help for the settings it will take)\n',
  };
}
