// When the exchange cannot start, it says why through its logger (one JSON
// line per record on stdout, pino's format) with the cause, and exits non-zero.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { describe, expect, it } from 'vitest';

import { runExchangeToExit, startExchangeProcess } from './support/exchange-process.js';

interface Run {
  readonly code: number | null;
  /** The stdout lines that are JSON log records. */
  readonly records: Record<string, unknown>[];
  readonly output: string;
}

async function run(env: Record<string, string>): Promise<Run> {
  const { code, stdout, stderr } = await runExchangeToExit(env);
  const records = stdout
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as Record<string, unknown>);
  return { code, records, output: stdout + stderr };
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

  it('refuses a second process on the embedded database of a running one (D34), which serves on', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'gpux-two-'));
    const embedded = { DATABASE_URL: '', NATS_URL: '', GPUX_DATA_DIR: dataDir };
    const first = await startExchangeProcess(embedded);
    try {
      const second = await run(embedded);
      expect(second.code, second.output).toBe(1);
      const fatal = second.records.find((x) => x['level'] === 60);
      expect(fatal, second.output).toMatchObject({
        msg: 'the exchange could not start',
        err: {
          message: expect.stringContaining(`in use by process ${first.child.pid}`) as string,
        },
      });
      // It touched nothing: the first one still owns and serves.
      expect((await fetch(`${first.url}/readyz`)).status).toBe(200);
    } finally {
      await first.stop('SIGKILL');
    }
    // A lock left by kill -9 is taken over: the next start serves.
    const next = await startExchangeProcess(embedded);
    try {
      expect((await fetch(`${next.url}/readyz`)).status).toBe(200);
    } finally {
      await next.stop('SIGTERM');
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 120_000);
});
