// A private nats-server for a test: its own port, store directory and
// configuration, started and stopped by PID (never the machine's own server).

import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createConnection } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { freePort } from './net.js';
import { until } from './until.js';

export const NATS_SERVER = process.env['GPUX_NATS_SERVER'] ?? '/usr/sbin/nats-server';

async function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection({ host: '127.0.0.1', port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

export class PrivateNats {
  private child: ChildProcess | undefined;
  readonly storeDir: string;
  readonly confFile: string;
  log = '';

  private constructor(
    readonly port: number,
    dir: string,
  ) {
    this.storeDir = join(dir, 'store');
    this.confFile = join(dir, 'nats-server.conf');
  }

  get url(): string {
    return `nats://127.0.0.1:${this.port}`;
  }

  /** The running server's PID (for `nats-server --signal reload=<pid>`). */
  get pid(): number | undefined {
    return this.child?.exitCode === null ? this.child.pid : undefined;
  }

  /** A server on a free port; `extra` is appended to its configuration (authorization, …). */
  static async start(extra = ''): Promise<PrivateNats> {
    const dir = mkdtempSync(join(tmpdir(), 'gpux-nats-'));
    const nats = new PrivateNats(await freePort(), dir);
    writeFileSync(
      nats.confFile,
      `host: 127.0.0.1\nport: ${nats.port}\njetstream { store_dir: ${JSON.stringify(nats.storeDir)} }\n${extra}`,
    );
    await nats.resume();
    return nats;
  }

  /** Start (again, on the same port and store). */
  async resume(): Promise<void> {
    const child = spawn(NATS_SERVER, ['-c', this.confFile], { stdio: ['ignore', 'pipe', 'pipe'] });
    this.child = child;
    child.stdout?.on('data', (b: Buffer) => (this.log += b.toString()));
    child.stderr?.on('data', (b: Buffer) => (this.log += b.toString()));
    await until(
      'nats-server to accept connections',
      async () => {
        if (child.exitCode !== null) throw new Error(`nats-server exited:\n${this.log}`);
        return accepts(this.port);
      },
      { timeoutMs: 5_000, everyMs: 25, output: () => this.log },
    );
  }

  /** Stopped: its JetStream store is removed (the server lost its data); resume() starts it empty. */
  wipeStore(): void {
    if (this.pid !== undefined) throw new Error('nats-server is running: stop it first');
    rmSync(this.storeDir, { recursive: true, force: true });
  }

  /** Stop by PID; `kill` SIGKILLs it (a crash), else SIGTERM. */
  async stop(kill = false): Promise<void> {
    const child = this.child;
    if (child === undefined || child.exitCode !== null) return;
    this.child = undefined;
    child.kill(kill ? 'SIGKILL' : 'SIGTERM');
    await once(child, 'exit');
  }
}
