// What the exchange and its feed writer process (feed/writer-process.ts) say
// to each other over the IPC channel of node:child_process. The exchange
// numbers and encodes a book's events and sends each batch once; the writer
// holds the watchers' sockets and writes to them (docs/architecture.md,
// "The feed writer process"). One channel carries everything in order, so a
// watcher handed over after a book's events arrives after them.

import type { CloseReason } from '../views/feed.js';

/** A book, as `${gpu_type}/${zone}`. */
export type BookKey = string;

/** A book's events: `[sequence, encoded event]`, consecutive from `first`. */
export interface EventsMessage {
  readonly t: 'events';
  readonly book: BookKey;
  /** How many times the book was rebuilt from the database (BookFeed.epoch). */
  readonly epoch: number;
  readonly events: readonly (readonly [number, string])[];
}

/** Every watcher of the book is told the stream is alive (the number repeats the last). */
export interface HeartbeatMessage {
  readonly t: 'heartbeat';
  readonly book: BookKey;
  readonly epoch: number;
  readonly seq: number;
  readonly text: string;
}

/** The book was rebuilt from the database: every watcher gets `text`, a snapshot at `seq`. */
export interface ResetMessage {
  readonly t: 'reset';
  readonly book: BookKey;
  readonly epoch: number;
  readonly seq: number;
  readonly text: string;
}

/** Every stream of the book ends with a `closed` event (the market closes). */
export interface CloseBookMessage {
  readonly t: 'close-book';
  readonly book: BookKey;
  readonly reason: CloseReason;
}

/** One stream ends with a `closed` event (the exchange drains). */
export interface CloseOneMessage {
  readonly t: 'close-one';
  readonly id: number;
  readonly reason: CloseReason;
}

/** Sent with a socket: a watcher whose head (and snapshot or missed events) is written. */
export interface WatchMessage {
  readonly t: 'watch';
  readonly id: number;
  readonly book: BookKey;
  readonly epoch: number;
  /** The last event the head brought it. */
  readonly through: number;
  /** HTTP/1.1 chunked body; false for an HTTP/1.0 client (bytes until close). */
  readonly chunked: boolean;
  readonly maxBufferedBytes: number;
}

export type BookMessage = EventsMessage | HeartbeatMessage | ResetMessage | CloseBookMessage;

/** To the writer: book messages batched per turn of the event loop, or one watcher with its socket. */
export type ToWriter =
  | { readonly t: 'batch'; readonly items: readonly (BookMessage | CloseOneMessage)[] }
  | WatchMessage;

/**
 * From the writer: it listens (a message sent before would be lost, the
 * process still loading); a watcher left (dropped, closed or disconnected);
 * it has taken batches (the exchange bounds what waits for it).
 */
export type FromWriter =
  | { readonly t: 'ready' }
  | { readonly t: 'gone'; readonly id: number }
  /** It has taken this many more batches off the channel. */
  | { readonly t: 'taken'; readonly batches: number };
