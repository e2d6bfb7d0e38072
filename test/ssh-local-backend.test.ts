// The simulated provisioner's session backend on this host, without SSH:
// every process of a session dies with it (process groups, job control and
// leftovers included), and forwards reach only the lease's own listeners.

import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import type { AddressInfo, Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { LocalWorkspaceBackend } from '../agent/src/ssh/index.js';
import type { ExecHandle, SessionExit, ShellHandle } from '../agent/src/ssh/index.js';

import { isDead } from './support/processes.js';
import { untilWith } from './support/until.js';

const until = untilWith({ timeoutMs: 10_000, everyMs: 20 });

function collect(stream: Readable): { text: string } {
  const out = { text: '' };
  stream.on('data', (d: Buffer) => (out.text += d.toString()));
  return out;
}

function exited(handle: ExecHandle | ShellHandle): Promise<SessionExit> {
  return new Promise((resolve) => handle.onExit(resolve));
}

let dir: string;
let backend: LocalWorkspaceBackend;
let other: LocalWorkspaceBackend;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'gpux-local-backend-'));
  const env = { PATH: process.env['PATH'] ?? '/usr/bin:/bin' };
  backend = new LocalWorkspaceBackend(dir, env, { killGraceMs: 200 });
  other = new LocalWorkspaceBackend(dir, env, { killGraceMs: 200 });
});
afterEach(async () => {
  await backend.terminate();
  await other.terminate();
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('LocalWorkspaceBackend processes', () => {
  it('exec runs in the workspace with HOME there and reports the exit status', async () => {
    const h = await backend.exec({
      env: { LANG: 'C' },
      command: 'echo "$PWD $HOME $LANG"; exit 9',
    });
    const out = collect(h.stdout);
    h.stdin.end();
    expect(await exited(h)).toEqual({ code: 9 });
    expect(out.text).toBe(`${dir} ${dir} C\n`);
  });

  it('a command killed by a signal reports the signal', async () => {
    const h = await backend.exec({ env: {}, command: 'kill -TERM $$' });
    expect(await exited(h)).toEqual({ signal: 'TERM' });
  });

  it('kill() ends the command and the children it started', async () => {
    const h = await backend.exec({
      env: {},
      command: 'sleep 1000 & echo $!; sleep 1001 & echo $!; wait',
    });
    const out = collect(h.stdout);
    await until('two pids', () => out.text.split('\n').length > 2);
    const pids = out.text.trim().split('\n').map(Number);
    expect(pids.some(isDead)).toBe(false);
    await h.kill();
    expect(pids.filter((pid) => !isDead(pid))).toEqual([]);
  });

  it('kill() of a pty shell also ends its job-control groups', async () => {
    const h = await backend.shell({ term: 'xterm', cols: 80, rows: 24, env: {} });
    let text = '';
    h.onData((d) => (text += d.toString()));
    h.write(Buffer.from('sleep 999 & echo "PID=$!"\n'));
    await until('the job pid', () => /PID=\d+/.test(text));
    const pid = Number(/PID=(\d+)/.exec(text)?.[1]);
    expect(isDead(pid)).toBe(false);
    const gone = exited(h);
    await h.kill();
    expect(isDead(pid)).toBe(true);
    await gone;
  });

  it('terminate() ends what sessions that already ended left running', async () => {
    const h = await backend.exec({
      env: {},
      command: 'nohup sleep 1002 >/dev/null 2>&1 & echo $!',
    });
    const out = collect(h.stdout);
    h.stdin.end();
    await exited(h);
    const pid = Number(out.text.trim());
    expect(isDead(pid)).toBe(false);
    await other.terminate(); // another workspace's terminate leaves it alone
    expect(isDead(pid)).toBe(false);
    await backend.terminate();
    expect(isDead(pid)).toBe(true);
  });

  it('hangup() closes the pipes of a command, as sshd does when the client leaves', async () => {
    const h = await backend.exec({ env: {}, command: 'cat' });
    const done = exited(h);
    h.hangup();
    expect(await done).toEqual({ code: 0 });
  });
});

describe('LocalWorkspaceBackend forwards', () => {
  let hostServer: Server;
  afterAll(() => hostServer?.close());

  it('connects to a port a process of the lease listens on, and to nothing else', async () => {
    const serve =
      "exec node -e \"const s=require('net').createServer(c=>c.end('hi')).listen(0,'127.0.0.1',()=>console.log(s.address().port))\"";
    const mine = await backend.exec({ env: {}, command: serve });
    const theirs = await other.exec({ env: {}, command: serve });
    const [a, b] = [collect(mine.stdout), collect(theirs.stdout)];
    await until('both servers', () => /\d+\n/.test(a.text) && /\d+\n/.test(b.text));
    const [myPort, theirPort] = [Number(a.text), Number(b.text)];
    hostServer = createServer((c) => c.end('host'));
    hostServer.listen(0, '127.0.0.1');
    await once(hostServer, 'listening');
    const hostPort = (hostServer.address() as AddressInfo).port;

    for (const host of ['127.0.0.1', 'localhost']) {
      const ok = await backend.forward(host, myPort);
      expect(ok.ok).toBe(true);
      if (ok.ok) {
        let got = '';
        ok.socket.on('data', (d: Buffer) => (got += d.toString()));
        await once(ok.socket, 'close');
        expect(got).toBe('hi');
      }
    }
    expect(await backend.forward('127.0.0.1', theirPort)).toMatchObject({ ok: false });
    expect(await backend.forward('127.0.0.1', hostPort)).toMatchObject({ ok: false });
    expect(await backend.forward('192.0.2.1', myPort)).toMatchObject({ ok: false });
    expect(await backend.forward('127.0.0.1', 0)).toMatchObject({ ok: false });
    const theirs2 = await other.forward('127.0.0.1', theirPort);
    expect(theirs2.ok).toBe(true);
    if (theirs2.ok) theirs2.socket.destroy();

    await mine.kill();
    expect(await backend.forward('127.0.0.1', myPort)).toMatchObject({ ok: false });
  });
});
