// The Io of the real process: stdout, stderr, the environment, and a secret
// read from stdin (piped: all of it; a terminal: one line, not echoed), a
// yes/no question on the terminal, and Ctrl-C caught while a command waits.

import { createInterface } from 'node:readline';
import { Writable } from 'node:stream';

import type { Io } from './command.js';

async function readAll(stream: NodeJS.ReadableStream): Promise<string> {
  let text = '';
  for await (const chunk of stream) text += String(chunk);
  return text;
}

/** One line typed on the terminal, its echo swallowed. */
async function readHidden(prompt: string): Promise<string> {
  // The terminal stops echoing (readline's raw mode) before the prompt asks.
  const silent = new Writable({ write: (_chunk, _enc, done) => done() });
  const rl = createInterface({ input: process.stdin, output: silent, terminal: true });
  process.stderr.write(prompt);
  try {
    return await new Promise<string>((resolve, reject) => {
      rl.once('line', resolve);
      rl.once('close', () => reject(new Error('stdin closed before a token was typed')));
    });
  } finally {
    rl.close();
    process.stderr.write('\n');
  }
}

/** A yes/no question on the terminal: the prompt on stderr, one line from stdin. */
async function confirm(question: string): Promise<boolean> {
  const rl = createInterface({ input: process.stdin, output: process.stderr, terminal: true });
  try {
    const answer = await new Promise<string>((resolve) => {
      rl.question(`${question} [y/N] `, resolve);
      rl.once('close', () => resolve(''));
    });
    return /^y(es)?$/i.test(answer.trim());
  } finally {
    rl.close();
  }
}

export function processIo(): Io {
  // A reader that stopped reading (`gpux commands | head`) is not an error.
  process.stdout.on('error', (e: NodeJS.ErrnoException) => {
    if (e.code !== 'EPIPE') throw e;
    process.exit(process.exitCode ?? 0);
  });
  return {
    out: (text) => void process.stdout.write(text),
    err: (text) => void process.stderr.write(text),
    env: process.env,
    stdoutIsTty: process.stdout.isTTY === true,
    stdinIsTty: process.stdin.isTTY === true,
    stderrIsTty: process.stderr.isTTY === true,
    confirm,
    onInterrupt(handler) {
      process.on('SIGINT', handler);
      return () => void process.off('SIGINT', handler);
    },
    readSecret: (prompt) =>
      process.stdin.isTTY === true ? readHidden(prompt) : readAll(process.stdin),
    now: () => Date.now(),
  };
}
