// A stand-in for a watcher's HTTP response in tests of the feed: it records
// what was written and, while `stuck`, holds it unsent (writableLength
// grows), as a socket whose client stopped reading.

import type { FeedSink } from '../watcher.js';

export class FakeSink implements FeedSink {
  readonly chunks: string[] = [];
  writableLength = 0;
  writableEnded = false;
  destroyed = false;
  /** While set, what is written stays unsent (writableLength grows). */
  stuck = false;

  write(chunk: Buffer | string): boolean {
    const text = chunk.toString();
    this.chunks.push(text);
    if (this.stuck) this.writableLength += Buffer.byteLength(text);
    return !this.stuck;
  }
  end(): void {
    this.writableEnded = true;
  }
  destroy(): void {
    this.destroyed = true;
  }

  /** Every event written, parsed. */
  get events(): { id?: number; event: string; data: Record<string, unknown> }[] {
    return this.chunks
      .join('')
      .split('\n\n')
      .filter((b) => b.includes('data: '))
      .map((block) => {
        const lines = block.split('\n');
        const field = (f: string): string | undefined =>
          lines.find((l) => l.startsWith(`${f}: `))?.slice(f.length + 2);
        const id = field('id');
        return {
          ...(id === undefined ? {} : { id: Number(id) }),
          event: field('event') ?? '',
          data: JSON.parse(field('data') ?? '{}') as Record<string, unknown>,
        };
      });
  }
}
