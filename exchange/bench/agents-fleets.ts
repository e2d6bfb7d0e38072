// The bench's side of its agent fleets (agents-fleet.ts): forks them (with
// the bench's own node flags, so TypeScript runs through tsx), sends each a
// request and waits for its reply over the IPC channel, and stops them.

import { fork } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';

import type { FleetAnswer, FleetReply, FleetRequest } from './agents-fleet.js';

const FLEET = fileURLToPath(new URL('./agents-fleet.ts', import.meta.url));

class FleetProcess {
  private nextId = 1;
  private readonly pending = new Map<
    number,
    { resolve: (a: FleetAnswer) => void; reject: (e: Error) => void }
  >();

  constructor(readonly child: ChildProcess) {
    child.on('message', (m: FleetReply) => {
      const p = this.pending.get(m.id);
      this.pending.delete(m.id);
      if (m.ok) p?.resolve(m.answer);
      else p?.reject(new Error(`fleet ${child.pid}: ${m.error}`));
    });
    child.once('exit', (code, signal) => {
      for (const p of this.pending.values()) {
        p.reject(new Error(`fleet ${child.pid} exited (${code ?? signal})`));
      }
      this.pending.clear();
    });
  }

  request(request: FleetRequest): Promise<FleetAnswer> {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.child.send({ id, request });
    });
  }
}

export class Fleets {
  private constructor(private readonly fleets: readonly FleetProcess[]) {}

  static start(count: number): Fleets {
    const fleets: FleetProcess[] = [];
    for (let i = 0; i < count; i++) {
      // The bench's own node flags (--import tsx), then BENCH_FLEET_NODE_ARGS (e.g. --cpu-prof).
      const child = fork(FLEET, ['--agents-fleet'], {
        execArgv: [
          ...process.execArgv,
          ...(process.env['BENCH_FLEET_NODE_ARGS'] ?? '').split(' ').filter((a) => a !== ''),
        ],
        stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      });
      fleets.push(new FleetProcess(child));
    }
    return new Fleets(fleets);
  }

  get size(): number {
    return this.fleets.length;
  }

  get pids(): number[] {
    return this.fleets.flatMap((f) => (f.child.pid === undefined ? [] : [f.child.pid]));
  }

  /** One request to each fleet (made by `of(fleet number)`), answered by all. */
  all<A extends FleetAnswer>(of: (k: number) => FleetRequest): Promise<A[]> {
    return Promise.all(this.fleets.map((f, k) => f.request(of(k)) as Promise<A>));
  }

  /** One request to fleet `k`. */
  one<A extends FleetAnswer>(k: number, request: FleetRequest): Promise<A> {
    const f = this.fleets[k];
    if (f === undefined) return Promise.reject(new Error(`no fleet ${k}`));
    return f.request(request) as Promise<A>;
  }

  /** Asks every fleet to stop; kills those that have not exited 10 s later. */
  async stop(): Promise<void> {
    await Promise.all(
      this.fleets.map(async (f) => {
        const c = f.child;
        if (c.exitCode !== null || c.signalCode !== null) return;
        const exited = new Promise<void>((r) => c.once('exit', () => r()));
        const kill = setTimeout(() => c.kill('SIGKILL'), 10_000);
        await f.request({ kind: 'stop' }).catch(() => undefined);
        await exited;
        clearTimeout(kill);
      }),
    );
  }
}
