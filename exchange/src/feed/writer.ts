// The exchange's side of the feed writer process (feed/writer-process.ts,
// docs/architecture.md, "The feed writer process"). Started with the first
// stream that is handed over; a stream's socket goes to it once its head is
// written, and each book's events go to it once per turn of the event loop,
// batched, as long as one of the book's streams is there. When the process
// exits its streams are gone (their clients reconnect with Last-Event-ID) and
// the next stream starts another.
//
// It runs at a lower scheduling priority than the exchange: when the cores
// are short, the order path runs first and the feed's writes wait. What
// waits for it is bounded: a writer that has not taken MAX_UNTAKEN_BYTES of
// events off the channel (stopped, or starved for minutes) is killed, as a
// slow watcher is dropped, and its streams' clients reconnect.

import { fork } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import type { Socket } from 'node:net';
import os from 'node:os';
import { fileURLToPath } from 'node:url';

import type { Logger } from '../logger.js';
import { SILENT_LOGGER } from '../logger.js';
import type { CloseReason } from '../views/feed.js';
import { textOf } from './fan-out.js';
import type { Entry } from './fan-out.js';
import type {
  BookMessage,
  CloseOneMessage,
  EventsMessage,
  FromWriter,
  WatchMessage,
} from './writer-protocol.js';

/**
 * A book's events as published (BookFeed.publish, on the order path): encoded
 * when the turn's batch is sent, not before.
 */
export interface PublishedEvents {
  readonly t: 'published';
  readonly book: string;
  readonly epoch: number;
  readonly entries: readonly Entry[];
}

type Queued = BookMessage | CloseOneMessage | PublishedEvents;

function wire(m: Queued): BookMessage | CloseOneMessage {
  if (m.t !== 'published') return m;
  const events: EventsMessage = {
    t: 'events',
    book: m.book,
    epoch: m.epoch,
    events: m.entries.map((e) => [e.seq, textOf(e)] as const),
  };
  return events;
}

/** The writer's niceness (0 is the exchange's; 19 the least favoured). */
export const WRITER_NICENESS = 10;

/** A writer that dies this many times … */
export const CRASHES_TO_GIVE_UP = 3;
/** … within this long is not started again. */
export const CRASH_WINDOW_MS = 60_000;

/** Encoded events sent and not yet taken by the writer, at most (bytes of text). */
export const MAX_UNTAKEN_BYTES = 64 * 1024 * 1024;

/** The process's entry point, beside this module (source under tsx, or built). */
function entry(): { file: string; execArgv: string[] } {
  const here = import.meta.url;
  const ts = here.endsWith('.ts');
  return {
    file: fileURLToPath(new URL(`./writer-process.${ts ? 'ts' : 'js'}`, here)),
    execArgv: ts ? ['--import', 'tsx'] : [],
  };
}

export class FeedWriter {
  private child: ChildProcess | undefined;
  /** It has said it listens; until then what would be sent waits here, in order. */
  private ready = false;
  private waiting: { send: () => void; abandon?: () => void }[] = [];
  private queue: Queued[] = [];
  private flushing: NodeJS.Immediate | undefined;
  /** The streams handed over, by id: what to call when each ends. */
  private readonly streams = new Map<number, () => void>();
  private nextId = 1;
  private stopped = false;
  /** The sizes of the batches sent and not yet taken, oldest first, and their sum. */
  private untaken: number[] = [];
  private untakenBytes = 0;
  /** When the writers that died unasked died, newest last. */
  private crashes: number[] = [];
  private gaveUp = false;

  constructor(
    private readonly o: { readonly logger?: Logger; readonly maxUntakenBytes?: number } = {},
  ) {}

  /** Streams handed over and not yet ended. */
  get watching(): number {
    return this.streams.size;
  }

  /** The process's id while it runs (tests, metrics). */
  get pid(): number | undefined {
    return this.child?.pid;
  }

  /**
   * Nothing more is handed over: stopped (the exchange closes), or the
   * writer died CRASHES_TO_GIVE_UP times within CRASH_WINDOW_MS, and this
   * process writes the streams itself from then on.
   */
  get closed(): boolean {
    return this.stopped || this.gaveUp;
  }

  /** Send `m` to the writer, with the rest of this turn's messages. */
  post(m: Queued): void {
    if (this.child === undefined) return;
    this.queue.push(m);
    this.flushing ??= setImmediate(() => this.flush());
  }

  /** End a stream handed over, with its `closed` event. */
  closeOne(id: number, reason: CloseReason): void {
    this.post({ t: 'close-one', id, reason });
  }

  /**
   * Hand `socket` (its head written and flushed) to the writer. `ended`:
   * called once, when the stream ends there (or could not be handed over).
   */
  handOver(socket: Socket, m: Omit<WatchMessage, 't' | 'id'>, ended: () => void): number {
    const child = this.start();
    const id = this.nextId++;
    this.streams.set(id, ended);
    // Whatever is queued goes first: the events up to the stream's start.
    this.flush();
    // A socket of a net.Server is otherwise counted as the writer's by the
    // server (it would wait for the writer at close); this one is the
    // writer's alone, and the exchange's copy is closed once it is sent.
    (socket as Socket & { server: unknown }).server = null;
    const watch: WatchMessage = { t: 'watch', id, ...m };
    this.whenReady(
      () => {
        // The client left while the writer was starting.
        if (socket.destroyed) {
          this.ended(id);
          return;
        }
        child.send(watch, socket, { keepOpen: true }, (err) => {
          socket.destroy();
          if (err !== null) this.ended(id);
        });
      },
      () => socket.destroy(),
    );
    return id;
  }

  /** Stop: what is queued is sent, then the channel closes and the writer ends its streams. */
  stop(): void {
    this.stopped = true;
    this.flush();
    const child = this.child;
    if (child?.connected === true) this.whenReady(() => child.disconnect());
  }

  private flush(): void {
    if (this.flushing !== undefined) clearImmediate(this.flushing);
    this.flushing = undefined;
    if (this.queue.length === 0) return;
    const items = this.queue.map(wire);
    this.queue = [];
    const child = this.child;
    if (child?.connected !== true) return;
    this.whenReady(() => {
      child.send({ t: 'batch', items });
      const bytes = items.reduce((n, m) => n + sizeOf(m), 0);
      this.untaken.push(bytes);
      this.untakenBytes += bytes;
      if (this.untakenBytes > (this.o.maxUntakenBytes ?? MAX_UNTAKEN_BYTES)) {
        (this.o.logger ?? SILENT_LOGGER).warn(
          { pid: child.pid, bytes: this.untakenBytes, streams: this.streams.size },
          'the feed writer process has fallen too far behind: killed; its streams end and their clients reconnect',
        );
        child.kill('SIGKILL');
      }
    });
  }

  /** The writer took `n` more batches. */
  private took(n: number): void {
    for (const bytes of this.untaken.splice(0, n)) this.untakenBytes -= bytes;
  }

  /** `abandon`: what to do instead if the process ends before it listens. */
  private whenReady(send: () => void, abandon?: () => void): void {
    if (this.ready) send();
    else this.waiting.push(abandon === undefined ? { send } : { send, abandon });
  }

  private ended(id: number): void {
    const f = this.streams.get(id);
    if (f === undefined) return;
    this.streams.delete(id);
    f();
  }

  private crashed(pid: number | undefined, code: number | null, signal: string | null): void {
    const now = Date.now();
    this.crashes = [...this.crashes.filter((t) => t > now - CRASH_WINDOW_MS), now];
    this.gaveUp = this.crashes.length >= CRASHES_TO_GIVE_UP;
    const log = this.o.logger ?? SILENT_LOGGER;
    const about = { pid, code, signal, streams: this.streams.size };
    if (this.gaveUp) {
      log.error(
        about,
        `the feed writer process died ${this.crashes.length} times within a minute: this process writes the live feed's streams itself from now on`,
      );
    } else {
      log.warn(
        about,
        'the feed writer process exited; its streams ended (their clients reconnect) and the next stream starts another',
      );
    }
  }

  private start(): ChildProcess {
    if (this.child !== undefined) return this.child;
    const { file, execArgv } = entry();
    const child = fork(file, [], { execArgv, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    this.child = child;
    this.ready = false;
    child.on('message', (m: FromWriter) => {
      if (m.t === 'gone') {
        this.ended(m.id);
        return;
      }
      if (m.t === 'taken') {
        this.took(m.batches);
        return;
      }
      this.ready = true;
      for (const w of this.waiting.splice(0)) if (child.connected) w.send();
    });
    child.on('error', () => undefined);
    child.once('exit', (code, signal) => {
      if (!this.stopped) this.crashed(child.pid, code, signal);
      if (this.child === child) this.child = undefined;
      this.untaken = [];
      this.untakenBytes = 0;
      this.queue = [];
      for (const w of this.waiting.splice(0)) w.abandon?.();
      for (const id of [...this.streams.keys()]) this.ended(id);
    });
    if (child.pid !== undefined) {
      try {
        os.setPriority(child.pid, WRITER_NICENESS);
      } catch {
        // Not allowed here: it runs at the exchange's priority.
      }
    }
    // It must not keep the exchange alive: stop() or the exchange's exit ends it.
    child.unref();
    (child.channel as { unref?: () => void } | null | undefined)?.unref?.();
    return child;
  }
}

/** About how much of the channel `m` takes (its encoded events' text). */
function sizeOf(m: BookMessage | CloseOneMessage): number {
  switch (m.t) {
    case 'events':
      return m.events.reduce((n, [, text]) => n + text.length, 0);
    case 'heartbeat':
    case 'reset':
      return m.text.length;
    default:
      return 64;
  }
}
