// The agent's SSH gateway end to end, driven by the real OpenSSH client
// (ssh, scp, sftp, ssh -L, and a terminal under tmux) against a gateway on
// a free port, with the simulated provisioner's LocalWorkspaceBackend.
// Host keys are pinned (StrictHostKeyChecking=yes) in every call; client
// keys are generated per run into a temporary directory.

import { execFileSync, spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { createServer, connect } from 'node:net';
import type { AddressInfo, Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  HOST_KEY_FILE,
  LocalWorkspaceBackend,
  SHUTDOWN_MESSAGE,
  SshGateway,
  loadOrCreateHostKey,
} from '../agent/src/ssh/index.js';
import type {
  EndpointDirectory,
  HostKey,
  Logger,
  SshEndpoint,
  SshGatewayLimits,
} from '../agent/src/ssh/index.js';

import { freePort } from './support/net.js';
import { SFTP_SERVER, requireProgram } from './support/prerequisites.js';
import { isDead } from './support/processes.js';
import { sshOptions } from './support/ssh-client.js';
import { inTmux } from './support/tmux.js';
import { untilWith } from './support/until.js';

interface LogLine {
  level: string;
  msg: string;
  obj: object;
}

function recordingLogger(lines: LogLine[]): Logger {
  const at =
    (level: string) =>
    (obj: object | string, msg?: string): void => {
      if (typeof obj === 'string') lines.push({ level, msg: obj, obj: {} });
      else lines.push({ level, msg: msg ?? '', obj });
    };
  return { error: at('error'), warn: at('warn'), info: at('info'), debug: at('debug') };
}

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs a program to its end; `input` goes to its stdin (closed after). */
function run(cmd: string, args: readonly string[], input = ''): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(input);
  });
}

const until = untilWith({ timeoutMs: 10_000, everyMs: 20 });

/** Connects to a local port and reads until the other side closes. */
async function readFrom(port: number): Promise<string> {
  const socket = connect({ host: '127.0.0.1', port });
  let data = '';
  socket.on('data', (d: Buffer) => (data += d.toString()));
  await once(socket, 'close');
  return data;
}

let tmp: string;
let keys: { alice: string; aliceRsa: string; mallory: string };
let knownHosts: string;
let stateDir: string;
let hostKey: HostKey;
let gateway: SshGateway;
let port: number;
const logs: LogLine[] = [];
const endpoints = new Map<string, SshEndpoint>();
const backends: LocalWorkspaceBackend[] = [];
const directory: EndpointDirectory = { lookup: (user) => endpoints.get(user) };
const children: ChildProcess[] = [];

function keygen(name: string, type: 'ed25519' | 'rsa'): string {
  const path = join(tmp, 'keys', name);
  const bits = type === 'rsa' ? ['-b', '3072'] : [];
  execFileSync('ssh-keygen', ['-q', '-t', type, ...bits, '-N', '', '-C', name, '-f', path]);
  return path;
}

function publicLine(key: string): string {
  return readFileSync(`${key}.pub`, 'utf8').trim();
}

function workspace(name: string): string {
  const dir = join(tmp, 'workspaces', name);
  mkdirSync(dir, { recursive: true });
  return dir;
}

function addLease(
  user: string,
  leaseId: string,
  authorized: readonly string[],
  state: SshEndpoint['state'] = 'ready',
  message?: string,
): { dir: string; backend: LocalWorkspaceBackend } {
  const dir = workspace(leaseId);
  const backend = new LocalWorkspaceBackend(dir, {
    PATH: process.env['PATH'] ?? '/usr/bin:/bin',
    LANG: 'C.UTF-8',
  });
  backends.push(backend);
  endpoints.set(user, {
    leaseId,
    nodeIndex: 0,
    authorizedKeys: authorized.map(publicLine),
    state,
    ...(message === undefined ? {} : { message }),
    backend,
  });
  return { dir, backend };
}

/** The gateway's port and known_hosts unless given (support/ssh-client.ts's sshOptions). */
function clientOptions(
  key: string,
  portNumber = port,
  hosts = knownHosts,
  logLevel = 'ERROR',
): string[] {
  return sshOptions(key, hosts, portNumber, logLevel);
}

function ssh(
  user: string,
  key: string,
  command: string,
  extra: string[] = [],
  input = '',
): Promise<Run> {
  return run('ssh', [...clientOptions(key), ...extra, `${user}@127.0.0.1`, command], input);
}

/** scp and sftp take the port as -P. */
function fileClientOptions(key: string): string[] {
  return clientOptions(key).map((a) => (a === '-p' ? '-P' : a));
}

function writeKnownHosts(path: string, portNumber: number, publicKey: string): string {
  writeFileSync(path, `[127.0.0.1]:${portNumber} ${publicKey}\n`);
  return path;
}

async function startGateway(limits?: Partial<SshGatewayLimits>, lines = logs): Promise<SshGateway> {
  const g = new SshGateway({
    host: '127.0.0.1',
    port: 0,
    hostKey,
    directory,
    logger: recordingLogger(lines),
    ...(limits === undefined ? {} : { limits }),
  });
  await g.start();
  return g;
}

let leaseA: { dir: string; backend: LocalWorkspaceBackend };

beforeAll(async () => {
  tmp = mkdtempSync(join(tmpdir(), 'gpux-ssh-e2e-'));
  mkdirSync(join(tmp, 'keys'));
  keys = {
    alice: keygen('alice', 'ed25519'),
    aliceRsa: keygen('alice-rsa', 'rsa'),
    mallory: keygen('mallory', 'ed25519'),
  };
  leaseA = addLease('lse_a-0', 'lse_a', [keys.alice, keys.aliceRsa]);
  addLease('lse_b-0', 'lse_b', [keys.mallory]);
  addLease('lse_s-0', 'lse_s', [keys.alice], 'starting', 'gpux: lse_s is still being provisioned');
  addLease('lse_u-0', 'lse_u', [keys.alice], 'unavailable');
  stateDir = join(tmp, 'state');
  hostKey = await loadOrCreateHostKey(stateDir, recordingLogger(logs));
  gateway = await startGateway();
  port = gateway.address().port;
  knownHosts = writeKnownHosts(join(tmp, 'known_hosts'), port, hostKey.publicKey);
});

afterAll(async () => {
  for (const child of children) child.kill('SIGKILL');
  await gateway?.close();
  await Promise.all(backends.map((b) => b.terminate()));
  if (tmp !== undefined) rmSync(tmp, { recursive: true, force: true });
});

describe('host key (D32: clients pin it)', () => {
  it('is kept 0600, matches ssh-keygen, and a restarted gateway serves the same key', async () => {
    const file = join(stateDir, HOST_KEY_FILE);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const derived = execFileSync('ssh-keygen', ['-y', '-f', file], { encoding: 'utf8' });
    expect(derived.split(' ').slice(0, 2).join(' ')).toBe(hostKey.publicKey);
    writeFileSync(join(tmp, 'host.pub'), `${hostKey.publicKey}\n`);
    const listed = execFileSync('ssh-keygen', ['-l', '-f', join(tmp, 'host.pub')], {
      encoding: 'utf8',
    });
    expect(listed).toContain(hostKey.fingerprint);

    const restartedKey = await loadOrCreateHostKey(stateDir);
    const restarted = new SshGateway({
      host: '127.0.0.1',
      port: 0,
      hostKey: restartedKey,
      directory,
      logger: recordingLogger([]),
    });
    await restarted.start();
    try {
      const p = restarted.address().port;
      const pinned = writeKnownHosts(join(tmp, 'known_hosts_restart'), p, hostKey.publicKey);
      const r = await run('ssh', [
        ...clientOptions(keys.alice, p, pinned),
        'lse_a-0@127.0.0.1',
        'echo pinned',
      ]);
      expect(r).toMatchObject({ code: 0, stdout: 'pinned\n' });
    } finally {
      await restarted.close();
    }
  });

  it('a client that pinned another key refuses to connect', async () => {
    const otherKey = readFileSync(`${keygen('impostor-host', 'ed25519')}.pub`, 'utf8');
    const wrong = writeKnownHosts(
      join(tmp, 'known_hosts_wrong'),
      port,
      otherKey.split(' ').slice(0, 2).join(' '),
    );
    const r = await run('ssh', [
      ...clientOptions(keys.alice, port, wrong),
      'lse_a-0@127.0.0.1',
      'true',
    ]);
    expect(r.code).toBe(255);
    expect(r.stderr).toMatch(/REMOTE HOST IDENTIFICATION HAS CHANGED|Host key verification failed/);
  });
});

describe('authentication: public keys of the lease only (D32)', () => {
  it('accepts the lease account ed25519 and RSA keys', async () => {
    expect(await ssh('lse_a-0', keys.alice, 'echo ed25519')).toMatchObject({
      code: 0,
      stdout: 'ed25519\n',
    });
    expect(await ssh('lse_a-0', keys.aliceRsa, 'echo rsa')).toMatchObject({
      code: 0,
      stdout: 'rsa\n',
    });
  });

  it('refuses another key, another lease user and an unknown user', async () => {
    for (const [user, key] of [
      ['lse_a-0', keys.mallory],
      ['lse_b-0', keys.alice],
      ['nobody', keys.alice],
    ] as const) {
      const r = await ssh(user, key, 'true');
      expect(r.code).toBe(255);
      expect(r.stderr).toContain('Permission denied (publickey)');
    }
  });
});

describe('sessions', () => {
  it('exec: stdin, stdout, stderr and the exit status pass through', async () => {
    const r = await ssh('lse_a-0', keys.alice, 'wc -l; echo oops >&2; exit 7', [], 'a\nb\nc\n');
    expect(r).toEqual({ code: 7, stdout: '3\n', stderr: 'oops\n' });
  });

  it('runs in the workspace with HOME there; honours LANG and LC_* but not other env', async () => {
    const r = await ssh(
      'lse_a-0',
      keys.alice,
      'echo "$PWD|$HOME|${LC_PAPER-}|${LANG-}|${FOO-unset}"',
      ['-o', 'SetEnv=LC_PAPER=de_DE.UTF-8 LANG=C FOO=bar'],
    );
    expect(r.stdout).toBe(`${leaseA.dir}|${leaseA.dir}|de_DE.UTF-8|C|unset\n`);
  });

  it('exec on a pty (ssh -tt): a terminal, and the exit status', async () => {
    const r = await ssh('lse_a-0', keys.alice, 'tty; test -t 0 && echo on-a-tty; exit 3', ['-tt']);
    expect(r.code).toBe(3);
    expect(r.stdout).toMatch(/^\/dev\/pts\/\d+\r\non-a-tty\r\n/);
  });

  it('shell without a pty reads commands from stdin (ssh -T)', async () => {
    const r = await ssh('lse_a-0', keys.alice, '', ['-T'], 'echo from-stdin\nexit 4\n');
    expect(r).toMatchObject({ code: 4, stdout: 'from-stdin\n' });
  });

  it('interactive shell on a pty under tmux: stty size follows window-change', async () => {
    const login = ['ssh', ...clientOptions(keys.alice), 'lse_a-0@127.0.0.1'];
    await inTmux(`gpux-ssh-${process.pid}`, login, { columns: 100, rows: 30 }, until, async (t) => {
      await t.typed('echo "size=$(stty size) home=$HOME"', /size=30 100 home=\S+/);
      t.resize(120, 40);
      await t.typed('echo "resized=$(stty size)"', /resized=40 120/);
      await t.typed('tty', /\/dev\/pts\/\d+/);
      await t.exit();
    });
  });

  it('an endpoint still starting or unavailable: login works, sessions say why and exit', async () => {
    const starting = await ssh('lse_s-0', keys.alice, 'echo should-not-run');
    expect(starting).toEqual({
      code: 75,
      stdout: '',
      stderr: 'gpux: lse_s is still being provisioned\n',
    });
    const unavailable = await ssh('lse_u-0', keys.alice, 'true');
    expect(unavailable.code).toBe(69);
    expect(unavailable.stderr).toContain('unavailable');
  });
});

describe('sftp subsystem confined to the workspace', () => {
  it('scp uploads and downloads a file', async () => {
    const local = join(tmp, 'upload.bin');
    const payload = randomBytes(3 * 1024 * 1024 + 17);
    writeFileSync(local, payload);
    const up = await run('scp', [
      ...fileClientOptions(keys.alice),
      local,
      'lse_a-0@127.0.0.1:up.bin',
    ]);
    expect(up).toMatchObject({ code: 0 });
    expect(readFileSync(join(leaseA.dir, 'up.bin')).equals(payload)).toBe(true);
    const back = join(tmp, 'download.bin');
    const down = await run('scp', [
      ...fileClientOptions(keys.alice),
      'lse_a-0@127.0.0.1:up.bin',
      back,
    ]);
    expect(down).toMatchObject({ code: 0 });
    expect(readFileSync(back).equals(payload)).toBe(true);
  });

  it('sftp lists, makes a directory, renames and removes', async () => {
    writeFileSync(join(leaseA.dir, 'notes.txt'), 'hello');
    const batch = [
      'mkdir results',
      'rename notes.txt results/notes.txt',
      'ls -1 results',
      'pwd',
      'cd ..',
      'pwd',
      'rm results/notes.txt',
      'rmdir results',
      'ls -1',
    ].join('\n');
    const r = await run(
      'sftp',
      [...fileClientOptions(keys.alice), '-b', '-', 'lse_a-0@127.0.0.1'],
      batch,
    );
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('results/notes.txt');
    expect(r.stdout).toMatch(/Remote working directory: \/\n[\s\S]*Remote working directory: \/\n/);
    expect(existsSync(join(leaseA.dir, 'results'))).toBe(false);
    expect(existsSync(join(leaseA.dir, 'notes.txt'))).toBe(false);
  });

  it('cannot leave the workspace, by .. or through a symlink', async () => {
    const secret = join(tmp, 'host-secret.txt');
    writeFileSync(secret, 'not for leases');
    symlinkSync(secret, join(leaseA.dir, 'leak'));
    const target = join(tmp, 'stolen.txt');
    for (const remote of ['leak', '../../host-secret.txt', `/..${secret}`]) {
      const r = await run('scp', [
        ...fileClientOptions(keys.alice),
        `lse_a-0@127.0.0.1:${remote}`,
        target,
      ]);
      expect(r.code).not.toBe(0);
      expect(existsSync(target)).toBe(false);
    }
    const put = await run('scp', [
      ...fileClientOptions(keys.alice),
      secret,
      'lse_a-0@127.0.0.1:leak',
    ]);
    expect(put.code).not.toBe(0);
    expect(readFileSync(secret, 'utf8')).toBe('not for leases');
  });
});

describe("sftp served by the backend's own server (Kubernetes mode: the image's sftp-server)", () => {
  it('passes the subsystem through to the sftp-server the backend runs; a backend without one says so', async (ctx) => {
    requireProgram(ctx, SFTP_SERVER);
    const withServer = addLease('lse_k-0', 'lse_k', [keys.alice]);
    writeFileSync(join(withServer.dir, 'weights.bin'), 'w');
    Object.assign(withServer.backend, {
      sftpCommand: `exec ${SFTP_SERVER.program} -d ${withServer.dir}`,
    });
    addLease('lse_n-0', 'lse_n', [keys.alice]);
    const g = new SshGateway({
      host: '127.0.0.1',
      port: 0,
      hostKey,
      directory,
      logger: recordingLogger(logs),
      sftp: 'backend',
    });
    await g.start();
    try {
      const p = g.address().port;
      const hosts = writeKnownHosts(join(tmp, 'known_hosts_backend_sftp'), p, hostKey.publicKey);
      const opts = clientOptions(keys.alice, p, hosts).map((a) => (a === '-p' ? '-P' : a));
      const served = await run('sftp', [...opts, '-b', '-', 'lse_k-0@127.0.0.1'], 'pwd\nls -1\n');
      expect(served, served.stderr).toMatchObject({ code: 0 });
      expect(served.stdout).toContain(`Remote working directory: ${withServer.dir}`);
      expect(served.stdout).toMatch(/^weights\.bin$/m);
      const none = await run('sftp', [...opts, '-b', '-', 'lse_n-0@127.0.0.1'], 'ls\n');
      expect(none.code).not.toBe(0);
      expect(none.stderr).toContain('gpux: no SFTP on this node');
    } finally {
      await g.close();
    }
  });
});

describe('ssh -L: only to ports the lease itself listens on', () => {
  const SERVER =
    "exec node -e \"const s=require('net').createServer(c=>c.end('hello from '+process.argv[1]+'\\n')).listen(0,'127.0.0.1',()=>console.log(s.address().port))\"";

  /** Starts a server inside a lease's session; resolves with its port. */
  async function serverIn(user: string, key: string, name: string): Promise<number> {
    const child = spawn('ssh', [...clientOptions(key), `${user}@127.0.0.1`, `${SERVER} ${name}`]);
    children.push(child);
    let out = '';
    child.stdout?.on('data', (d: Buffer) => (out += d.toString()));
    await until(`${name} server up`, () => /^\d+\n/.test(out));
    return Number(out.trim());
  }

  let hostServer: Server;
  afterAll(() => hostServer?.close());

  it('forwards to the lease server; refuses another lease, the host and remote hosts', async () => {
    const leasePort = await serverIn('lse_a-0', keys.alice, 'lease-a');
    const otherLeasePort = await serverIn('lse_b-0', keys.mallory, 'lease-b');
    hostServer = createServer((c) => c.end('hello from the host\n'));
    hostServer.listen(0, '127.0.0.1');
    await once(hostServer, 'listening');
    const hostPort = (hostServer.address() as AddressInfo).port;

    const toLease = await freePort();
    const toLocalhost = await freePort();
    const toOtherLease = await freePort();
    const toHost = await freePort();
    const toRemote = await freePort();
    const forwarder = spawn('ssh', [
      // Channel open failures are printed at INFO.
      ...clientOptions(keys.alice, port, knownHosts, 'INFO'),
      '-N',
      '-L',
      `${toLease}:127.0.0.1:${leasePort}`,
      '-L',
      `${toLocalhost}:localhost:${leasePort}`,
      '-L',
      `${toOtherLease}:127.0.0.1:${otherLeasePort}`,
      '-L',
      `${toHost}:127.0.0.1:${hostPort}`,
      '-L',
      `${toRemote}:192.0.2.1:80`,
      'lse_a-0@127.0.0.1',
    ]);
    children.push(forwarder);
    let stderr = '';
    forwarder.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
    // Probing the allowed forward opens no refused channel.
    await until(
      'local forwards listening',
      () =>
        new Promise<boolean>((resolve) => {
          const s = connect({ host: '127.0.0.1', port: toLease });
          s.on('connect', () => resolve(true));
          s.on('error', () => resolve(false));
          s.on('close', () => s.destroy());
          s.resume();
        }),
    );
    const refusals = (): number => (stderr.match(/open failed/g) ?? []).length;

    expect(await readFrom(toLease)).toBe('hello from lease-a\n');
    expect(await readFrom(toLocalhost)).toBe('hello from lease-a\n');
    expect(await readFrom(toOtherLease)).toBe('');
    expect(await readFrom(toHost)).toBe('');
    expect(await readFrom(toRemote)).toBe('');
    await until('three channel open failures', () => refusals() === 3);
    expect(stderr).toMatch(/channel \d+: open failed: connect failed/);
    forwarder.kill();
  });
});

describe('revocation (D26: access ends within seconds)', () => {
  it('ends open sessions with the message and 255, kills their processes, refuses the next login', async () => {
    addLease('lse_r-0', 'lse_r', [keys.alice]);
    // An exec session whose background sleep shares its process group, an
    // interactive pty session whose job control puts a sleep in a group of
    // its own (both sleeps must die), and an sftp session.
    const sessions = [
      spawn('ssh', [
        ...clientOptions(keys.alice),
        'lse_r-0@127.0.0.1',
        'sleep 1000 & echo $!; wait',
      ]),
      spawn('ssh', [...clientOptions(keys.alice), '-tt', 'lse_r-0@127.0.0.1']),
      spawn('sftp', [...fileClientOptions(keys.alice), 'lse_r-0@127.0.0.1']),
    ];
    children.push(...sessions);
    const outs = sessions.map((child) => {
      const out = { stdout: '', stderr: '', code: null as number | null, exitedAt: 0 };
      child.stdout?.on('data', (d: Buffer) => (out.stdout += d.toString()));
      child.stderr?.on('data', (d: Buffer) => (out.stderr += d.toString()));
      child.on('exit', (code) => {
        out.code = code;
        out.exitedAt = performance.now();
      });
      child.stdin?.on('error', () => undefined);
      return out;
    });
    sessions[1]?.stdin?.write('sleep 999 & echo "PID=$!"\n');
    sessions[2]?.stdin?.write('pwd\n');
    const [exec, pty, sftp] = outs as [(typeof outs)[0], (typeof outs)[0], (typeof outs)[0]];
    await until(
      'both sleeps started and sftp answering',
      () =>
        /^\d+\n/.test(exec.stdout) &&
        /PID=\d+/.test(pty.stdout) &&
        sftp.stdout.includes('Remote working directory'),
    );
    const pids = [Number(exec.stdout.trim()), Number(/PID=(\d+)/.exec(pty.stdout)?.[1])];
    expect(pids.every((pid) => !isDead(pid))).toBe(true);

    const message = 'gpux: lease lse_r was terminated';
    const started = performance.now();
    const closed = await gateway.revoke('lse_r', message);
    const resolvedMs = performance.now() - started;
    expect(closed).toBe(3);
    // sftp notices the closed connection at its next command.
    sessions[2]?.stdin?.write('ls\n');

    await until('every client exited', () => outs.every((o) => o.exitedAt > 0));
    for (const o of [exec, pty]) {
      expect(o.code).toBe(255);
      expect(o.stderr).toContain(message);
    }
    // sftp dies of SIGPIPE writing that command to its ssh, or exits non-zero.
    expect(sftp.code).not.toBe(0);
    expect(sftp.stderr).toContain(message);
    expect(sftp.stderr).toContain('Connection closed');
    await until('both sleeps dead', () => pids.every(isDead));
    const next = await ssh('lse_r-0', keys.alice, 'true');
    expect(next.code).toBe(255);
    expect(next.stderr).toContain('Permission denied (publickey)');

    const exits = outs.map((o) => (o.exitedAt - started).toFixed(1));
    console.info(
      `revoke() → client exit: ssh exec ${exits[0]} ms, ssh -tt ${exits[1]} ms; revoke() resolved after ${resolvedMs.toFixed(1)} ms`,
    );
    expect(logs.some((l) => l.msg === 'ssh access revoked')).toBe(true);
  });
});

describe('limits', () => {
  it('drops connections over the cap', async () => {
    const lines: LogLine[] = [];
    const g = await startGateway({ maxConnections: 2 }, lines);
    const p = g.address().port;
    /** Connects; resolves with the first data (the SSH banner), or '' when closed first. */
    const banner = (): Promise<{ socket: ReturnType<typeof connect>; first: string }> =>
      new Promise((resolve) => {
        const socket = connect({ host: '127.0.0.1', port: p });
        socket.on('error', () => undefined);
        socket.once('data', (d: Buffer) => resolve({ socket, first: d.toString() }));
        socket.once('close', () => resolve({ socket, first: '' }));
      });
    try {
      const a = await banner();
      const b = await banner();
      expect(a.first).toMatch(/^SSH-2\.0-gpux/);
      expect(b.first).toMatch(/^SSH-2\.0-gpux/);
      const c = await banner();
      expect(c.first).toBe('');
      expect(c.socket.destroyed || c.socket.readableEnded).toBe(true);
      expect(lines.some((l) => l.msg.includes('too many connections'))).toBe(true);
      for (const s of [a, b, c]) s.socket.destroy();
    } finally {
      await g.close();
    }
  });

  it('closes a connection that does not log in within the auth timeout', async () => {
    const lines: LogLine[] = [];
    const g = await startGateway({ authTimeoutMs: 300 }, lines);
    try {
      const socket = connect({ host: '127.0.0.1', port: g.address().port });
      socket.on('error', () => undefined);
      socket.resume(); // read the banner, so the close is seen
      await once(socket, 'close');
      expect(lines.some((l) => l.msg.includes('login timed out'))).toBe(true);
    } finally {
      await g.close();
    }
  });

  it('closes a connection after too many refused keys', async () => {
    const lines: LogLine[] = [];
    const g = await startGateway({ maxAuthFailures: 2 }, lines);
    try {
      const strangers = ['s1', 's2', 's3'].map((n) => keygen(n, 'ed25519'));
      const hosts = writeKnownHosts(
        join(tmp, 'known_hosts_auth'),
        g.address().port,
        hostKey.publicKey,
      );
      const r = await run('ssh', [
        ...clientOptions(keys.mallory, g.address().port, hosts),
        ...strangers.flatMap((k) => ['-i', k]),
        'lse_a-0@127.0.0.1',
        'true',
      ]);
      expect(r.code).toBe(255);
      expect(lines.some((l) => l.msg.includes('too many failed logins'))).toBe(true);
    } finally {
      await g.close();
    }
  });

  it('refuses channels over the per-connection cap (multiplexed sessions)', async () => {
    const lines: LogLine[] = [];
    const g = await startGateway({ maxChannelsPerConnection: 2 }, lines);
    const p = g.address().port;
    const hosts = writeKnownHosts(join(tmp, 'known_hosts_mux'), p, hostKey.publicKey);
    const control = join(tmp, `mux-${p}`);
    const base = [...clientOptions(keys.alice, p, hosts), '-S', control];
    const master = spawn('ssh', [...base, '-M', '-N', 'lse_a-0@127.0.0.1']);
    children.push(master);
    try {
      await until('the control socket', () => existsSync(control));
      const holders = [1, 2].map(() =>
        spawn('ssh', [...base, 'lse_a-0@127.0.0.1', 'echo up; sleep 30']),
      );
      children.push(...holders);
      const up = holders.map((h) => {
        const o = { text: '' };
        h.stdout?.on('data', (d: Buffer) => (o.text += d.toString()));
        return o;
      });
      await until('two sessions up', () => up.every((o) => o.text.includes('up')));
      // The mux client reports the refusal, then falls back to a login of its own.
      const third = await run('ssh', [...base, 'lse_a-0@127.0.0.1', 'echo third']);
      expect(third.stderr).toContain('Session open refused by peer');
      expect(lines.some((l) => l.msg.includes('too many channels'))).toBe(true);
      for (const h of holders) h.kill();
    } finally {
      master.kill();
      await g.close();
    }
  });
});

describe('close()', () => {
  it('stops listening and ends open sessions with the shutdown message', async () => {
    const g = await startGateway(undefined, []);
    const p = g.address().port;
    const hosts = writeKnownHosts(join(tmp, 'known_hosts_close'), p, hostKey.publicKey);
    const client = spawn('ssh', [
      ...clientOptions(keys.alice, p, hosts),
      'lse_a-0@127.0.0.1',
      'echo up; sleep 1000',
    ]);
    children.push(client);
    let out = '';
    let err = '';
    client.stdout?.on('data', (d: Buffer) => (out += d.toString()));
    client.stderr?.on('data', (d: Buffer) => (err += d.toString()));
    const exit = once(client, 'exit');
    await until('the session', () => out.includes('up'));
    await g.close();
    const [code] = (await exit) as [number | null];
    expect(code).toBe(255);
    expect(err).toContain(SHUTDOWN_MESSAGE);
    const refused = connect({ host: '127.0.0.1', port: p });
    const [error] = (await once(refused, 'error')) as [NodeJS.ErrnoException];
    expect(error.code).toBe('ECONNREFUSED');
  });
});
