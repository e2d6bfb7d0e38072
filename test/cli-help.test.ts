// Every `gpux` command answers --help (issue 20): the built command as a
// real process prints its usage and exits 0 on its own, having started
// nothing: no database made in its data directory, no agent state, no port
// bound, no banner.

import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { AGENT_SETTINGS } from '../agent/src/settings.js';
import { EXCHANGE_SETTINGS } from '@gpux/exchange';
import { afterAll, describe, expect, it } from 'vitest';

import { freePort } from './support/net.js';

const GPUX = fileURLToPath(new URL('../cli/bin/gpux.js', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'gpux-help-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Can `port` be bound on 127.0.0.1 (nothing holds it)? */
async function isFree(port: number): Promise<boolean> {
  const server = createServer();
  server.listen(port, '127.0.0.1');
  try {
    await once(server, 'listening');
    server.close();
    await once(server, 'close');
    return true;
  } catch {
    return false;
  }
}

interface Run {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stdout: string;
  readonly stderr: string;
  readonly ms: number;
  /** Were the ports it was given still free while it ran? */
  readonly portsFree: boolean;
  /** What its data and state directories hold after it exited. */
  readonly made: string[];
}

async function gpux(args: readonly string[]): Promise<Run> {
  const data = mkdtempSync(join(dir, 'data-'));
  const [port, grpcPort, sshPort] = [await freePort(), await freePort(), await freePort()];
  const started = Date.now();
  const child = spawn(process.execPath, [GPUX, ...args], {
    env: {
      ...process.env,
      // Were anything to start, it would start here, with these.
      HOST: '127.0.0.1',
      PORT: String(port),
      GRPC_PORT: String(grpcPort),
      GPUX_DATA_DIR: data,
      GPUX_STATE_DIR: join(data, 'agent'),
      GPUX_SSH_LISTEN: `127.0.0.1:${sshPort}`,
      DATABASE_URL: '',
      NATS_URL: '',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  const exited = once(child, 'exit') as Promise<[number | null, NodeJS.Signals | null]>;
  // A command that started something would still be running: it is stopped after 15 s.
  const killer = setTimeout(() => child.kill('SIGKILL'), 15_000);
  let portsFree = true;
  const watching = (async () => {
    while (child.exitCode === null && child.signalCode === null) {
      for (const p of [port, grpcPort, sshPort]) if (!(await isFree(p))) portsFree = false;
      await new Promise((r) => setTimeout(r, 50));
    }
  })();
  const [code, signal] = await exited;
  clearTimeout(killer);
  await watching;
  return {
    code,
    signal,
    stdout,
    stderr,
    ms: Date.now() - started,
    portsFree,
    made: readdirSync(data, { recursive: true }).map(String),
  };
}

describe('gpux … --help', () => {
  it.each([
    [[], /^usage: gpux <command>/],
    [['--help'], /^usage: gpux <command>/],
    [['start', '--help'], /^gpux start: /],
    [['exchange', '--help'], /^gpux exchange: /],
    [['agent', '--help'], /^gpux agent: /],
    [['nats-config', '--help'], /^usage: gpux nats-config /],
    [['exchange', '-h'], /^gpux exchange: /],
  ] as const)('gpux %j prints its usage and exits 0, starting nothing', async (args, usage) => {
    const r = await gpux(args);
    expect({ code: r.code, signal: r.signal, stderr: r.stderr }, r.stdout).toEqual({
      code: 0,
      signal: null,
      stderr: '',
    });
    expect(r.stdout).toMatch(usage);
    expect(r.stdout).not.toMatch(/^(listening on|\{"level":)/m);
    expect(r.portsFree).toBe(true);
    expect(r.made).toEqual([]);
    expect(r.ms).toBeLessThan(10_000);
  });

  it("each command's help lists its settings with their flags", async () => {
    const exchange = await gpux(['exchange', '--help']);
    for (const s of EXCHANGE_SETTINGS) expect(exchange.stdout).toContain(`${s.name}, ${s.flag}`);
    const agent = await gpux(['agent', '--help']);
    for (const s of AGENT_SETTINGS) expect(agent.stdout).toContain(`${s.name}, ${s.flag}`);
    const start = await gpux(['start', '--help']);
    for (const s of EXCHANGE_SETTINGS) expect(start.stdout).toContain(`${s.name}, ${s.flag}`);
    for (const name of ['GPUX_SSH_LISTEN', 'GPUX_ASK_PRICE'])
      expect(start.stdout).toContain(`${name}, --`);
  });

  it('an unknown command or flag is refused with exit 2, and starts nothing', async () => {
    const r = await gpux(['frobnicate']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/no command frobnicate/);
    const e = await gpux(['exchange', '--frobnicate']);
    expect(e.code).toBe(2);
    expect(e.stdout).toContain('unknown argument \\"--frobnicate\\"');
    expect(e.made).toEqual([]);
  });
});
