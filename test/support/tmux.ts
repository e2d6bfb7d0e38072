// An interactive program on a real terminal: tmux (a private server on its
// own socket, no configuration) runs it in a window of a given size; the
// test types lines, reads what the window shows, resizes it (the program
// gets SIGWINCH, ssh a window-change), and ends it.

import { execFileSync } from 'node:child_process';

export interface Terminal {
  /** What the window shows now. */
  pane(): string;
  /** Types `line` and Enter, then waits until the window shows `shows`. */
  typed(line: string, shows: RegExp): Promise<void>;
  /** Presses `key` as tmux names it (`C-c`), then waits until the window shows `shows`. */
  pressed(key: string, shows: RegExp): Promise<void>;
  resize(columns: number, rows: number): void;
  /** Types `exit` and waits until the program has ended (the session is gone). */
  exit(): Promise<void>;
}

/** How the test waits (its `until`): polls `condition` until it holds, naming `what`. */
export type WaitFor = (what: string, condition: () => boolean) => Promise<unknown>;

/**
 * Runs `command` (argv) in a tmux window of `columns` × `rows` on the tmux
 * socket `socket` (unique to the test), hands the terminal to `use`, and
 * kills that tmux server afterwards however `use` ended.
 */
export async function inTmux(
  socket: string,
  command: readonly string[],
  size: { readonly columns: number; readonly rows: number },
  waitFor: WaitFor,
  use: (terminal: Terminal) => Promise<void>,
): Promise<void> {
  const tmux = (...args: string[]): string =>
    execFileSync('tmux', ['-L', socket, '-f', '/dev/null', ...args], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
    });
  const session = 'term';
  const line = command.map((a) => `'${a}'`).join(' ');
  tmux(
    'new-session',
    '-d',
    '-s',
    session,
    '-x',
    String(size.columns),
    '-y',
    String(size.rows),
    line,
  );
  const pane = (): string => tmux('capture-pane', '-p', '-t', session);
  try {
    await use({
      pane,
      async typed(text, shows) {
        tmux('send-keys', '-t', session, text, 'Enter');
        await waitFor(`${text} → ${shows}`, () => shows.test(pane()));
      },
      async pressed(key, shows) {
        tmux('send-keys', '-t', session, key);
        await waitFor(`${key} → ${shows}`, () => shows.test(pane()));
      },
      resize(columns, rows) {
        tmux('resize-window', '-t', session, '-x', String(columns), '-y', String(rows));
      },
      async exit() {
        tmux('send-keys', '-t', session, 'exit', 'Enter');
        await waitFor('the shell to exit', () => {
          try {
            tmux('has-session', '-t', session);
            return false;
          } catch {
            return true;
          }
        });
      },
    });
  } finally {
    try {
      tmux('kill-server');
    } catch {
      // already gone with its last session
    }
  }
}
