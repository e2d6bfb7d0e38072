// When the exchange cannot start, it says why through its logger (one JSON
// line per record on stdout, pino's format) with the cause, and exits non-zero.

import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { EXCHANGE_NODE_FLAGS } from '@gpux/exchange';
import { describe, expect, it } from 'vitest';

const MAIN = fileURLToPath(new URL('../exchange/dist/main.js', import.meta.url));

interface Run {
  readonly code: number | null;
  /** The stdout lines that are JSON log records. */
  readonly records: Record<string, unknown>[];
  readonly output: string;
}

async function run(env: Record<string, string>): Promise<Run> {
  const child = spawn(process.execPath, [...EXCHANGE_NODE_FLAGS, MAIN], {
    env: { ...process.env, HOST: '127.0.0.1', PORT: '0', GRPC_PORT: '0', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const [code] = (await once(child, 'exit')) as [number | null];
  const records = output
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as Record<string, unknown>);
  return { code, records, output };
}

describe('the exchange failing to start', () => {
  it('logs every configuration problem at once and exits 2', async () => {
    const r = await run({ PORT: '70000', LOG_LEVEL: 'loud', DATABASE_URL: '' });
    expect(r.code, r.output).toBe(2);
    const fatal = r.records.find((x) => x['level'] === 60);
    expect(fatal, r.output).toMatchObject({
      msg: expect.stringContaining('invalid configuration') as string,
    });
    expect(fatal?.['problems']).toEqual([
      expect.stringContaining('PORT'),
      expect.stringContaining('LOG_LEVEL'),
    ]);
  });

  it('logs the error and its cause when the database cannot be reached, and exits 1', async () => {
    const r = await run({
      DATABASE_URL: 'postgres://postgres@127.0.0.1:1/nothing_here',
      GPUX_IN_PROCESS_BUS: '1',
    });
    expect(r.code, r.output).toBe(1);
    const fatal = r.records.find((x) => x['level'] === 60);
    expect(fatal, r.output).toMatchObject({
      msg: 'the exchange could not start',
      err: { message: expect.stringMatching(/ECONNREFUSED/) as string },
    });
    expect(JSON.stringify(fatal)).toContain('stack');
  });
});
