// The built `gpux` command as a user runs it: a child process with its own
// environment (no login or token of this machine leaks in), stdin if given,
// run to its exit.

import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';

export const GPUX = fileURLToPath(new URL('../../cli/bin/gpux.js', import.meta.url));

export interface GpuxRun {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Variables of this process that would change what gpux does: never passed on. */
const OURS = /^(GPUX_|XDG_CONFIG_HOME$|NO_COLOR$|FORCE_COLOR$)/;

export async function runGpux(
  args: readonly string[],
  env: NodeJS.ProcessEnv,
  stdin?: string,
): Promise<GpuxRun> {
  const base = Object.fromEntries(Object.entries(process.env).filter(([k]) => !OURS.test(k)));
  const child = spawn(process.execPath, [GPUX, ...args], {
    env: { ...base, ...env },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  child.stdin.end(stdin ?? '');
  const [code] = (await once(child, 'exit')) as [number | null];
  return { code, stdout, stderr };
}

export interface TerminalRun {
  readonly code: number;
  /** Everything the terminal showed, escapes included. */
  readonly output: string;
}

/**
 * The built `gpux` on a terminal of its own (a pty, as a user's shell gives
 * it): when it shows `prompt`, `typed` is typed and Enter pressed.
 */
export async function runGpuxOnTerminal(
  args: readonly string[],
  env: NodeJS.ProcessEnv,
  answer?: { readonly prompt: string; readonly typed: string },
): Promise<TerminalRun> {
  const pty = await import('node-pty');
  const base = Object.fromEntries(Object.entries(process.env).filter(([k]) => !OURS.test(k)));
  const term = pty.spawn(process.execPath, [GPUX, ...args], {
    cols: 200,
    rows: 50,
    name: 'xterm',
    env: { ...base, ...env },
  });
  let output = '';
  let answered = false;
  term.onData((d) => {
    output += d;
    if (answer !== undefined && !answered && output.includes(answer.prompt)) {
      answered = true;
      term.write(`${answer.typed}\r`);
    }
  });
  const code = await new Promise<number>((resolve) => term.onExit((e) => resolve(e.exitCode)));
  return { code, output };
}
