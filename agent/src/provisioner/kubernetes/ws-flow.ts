// Flow control between an SSH channel and the API server's WebSocket of an
// exec or a port-forward. @kubernetes/client-node writes what the WebSocket
// brings into our streams without looking at write()'s answer, and sends
// what our input streams emit without looking at the WebSocket's buffer; so
// a slow SSH client (`ssh host cat big-file`) or a slow server in the pod
// (`ssh -L` uploading faster than it reads) would be buffered here whole.

import type { PassThrough } from 'node:stream';

/** What can stop reading: the exec's or port-forward's WebSocket. */
export interface Pausable {
  pause?(): void;
  resume?(): void;
}

/**
 * Stops reading the WebSocket while any watched stream holds more than its
 * high-water mark (the SSH client is behind), and reads on once every one of
 * them has drained: stdout and stderr share one socket, so one draining does
 * not resume it while the other is still full.
 */
export class ReadGate {
  private readonly full = new Set<PassThrough>();

  /** `socket` is asked at each write: undefined until the WebSocket is open. */
  constructor(private readonly socket: () => Pausable | undefined) {}

  watch(out: PassThrough): void {
    const write = out.write.bind(out) as (...args: unknown[]) => boolean;
    out.write = ((...args: unknown[]) => {
      const ok = write(...args);
      const s = this.socket();
      if (!ok && !this.full.has(out) && s?.pause !== undefined) {
        this.full.add(out);
        if (this.full.size === 1) s.pause();
        out.once('drain', () => {
          if (this.full.delete(out) && this.full.size === 0) s.resume?.();
        });
      }
      return ok;
    }) as typeof out.write;
  }

  /** Reads again whatever is full: the session is ending (a paused WebSocket never sees the close). */
  open(): void {
    const wasFull = this.full.size > 0;
    this.full.clear();
    if (wasFull) this.socket()?.resume?.();
  }
}

/** The WebSocket as far as its send buffer goes. */
export interface SendBuffer {
  readonly bufferedAmount: number;
  /** 1: OPEN. */
  readonly readyState: number;
}

/** Bytes the WebSocket may hold unsent before the input stops being read. */
export const MAX_UNSENT_BYTES = 1024 * 1024;

/**
 * Stops reading `input` (what goes to the pod) while the WebSocket holds
 * more than MAX_UNSENT_BYTES unsent, and reads on below half of it; with
 * `input` paused its writers see write() answer false, and the SSH channel's
 * window closes. `pollMs`: how often a paused input looks again (the
 * WebSocket has no event for a drained buffer).
 */
export function gateSends(input: PassThrough, ws: SendBuffer, pollMs = 10): void {
  let timer: NodeJS.Timeout | undefined;
  input.on('data', () => {
    if (timer !== undefined || ws.bufferedAmount <= MAX_UNSENT_BYTES) return;
    input.pause();
    timer = setInterval(() => {
      if (ws.readyState === 1 && ws.bufferedAmount > MAX_UNSENT_BYTES / 2) return;
      clearInterval(timer);
      timer = undefined;
      input.resume();
    }, pollMs);
    timer.unref();
  });
  input.on('close', () => clearInterval(timer));
}
