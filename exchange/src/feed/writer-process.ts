// The feed writer: a child process of the exchange that holds the live feed's
// sockets and writes every watcher's events (docs/architecture.md,
// "The feed writer process"). A thousand watchers of a busy book mean some 40,000
// socket writes a second, most of it the kernel's; here they run beside the
// exchange's event loop instead of between its orders. The exchange writes
// each stream's head itself, then hands the socket over (node:child_process
// passes it as a file descriptor) and sends each book's events once.
//
// Started by feed/writer.ts with an IPC channel; it ends when the channel
// does (the exchange stopped or died), cutting what is still open.

import type { Socket } from 'node:net';

import { SocketSink } from './socket-sink.js';
import { WriterBooks } from './writer-books.js';
import type { FromWriter, ToWriter } from './writer-protocol.js';

/** After the exchange is gone, streams still ending get this long to send their last bytes. */
const EXIT_GRACE_MS = 2000;

const sockets = new Set<Socket>();
/** Batches taken since the exchange was last told. */
let taken = 0;
function tell(m: FromWriter): void {
  // The exchange may be gone already: then nobody needs to hear it.
  if (process.connected) process.send?.(m, undefined, {}, () => undefined);
}

const books = new WriterBooks((id) => tell({ t: 'gone', id }));

process.on('message', (m: ToWriter, socket: unknown) => {
  if (m.t === 'watch') {
    const s = socket as Socket | undefined;
    if (s === undefined) {
      books.closeOne(m.id, 'unavailable');
      return;
    }
    sockets.add(s);
    const sink = SocketSink.ofSocket(s, m.chunked);
    // The client sends nothing more; reading is how its leaving is seen.
    s.on('data', () => undefined);
    s.on('error', () => undefined);
    s.once('close', () => {
      sockets.delete(s);
      books.left(m.id);
    });
    books.watch(m, sink);
    return;
  }
  for (const item of m.items) {
    if (item.t === 'close-one') books.closeOne(item.id, item.reason);
    else books.apply(item);
  }
  // Said once a turn, for every batch taken in it.
  if (taken++ === 0) {
    setImmediate(() => {
      const batches = taken;
      taken = 0;
      tell({ t: 'taken', batches });
    });
  }
});

// A signal to the whole group (systemd's default KillMode, Ctrl-C in a
// terminal) is the exchange's to act on: it drains, ends the streams with
// their closed events, and then closes the channel, which ends this process.
process.on('SIGTERM', () => undefined);
process.on('SIGINT', () => undefined);

process.on('disconnect', () => {
  for (const s of sockets) s.end();
  // The process ends by itself once the last socket closes; at the latest now.
  setTimeout(() => process.exit(0), EXIT_GRACE_MS).unref();
});

tell({ t: 'ready' });
