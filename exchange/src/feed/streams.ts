// Every live feed stream this process serves (GET /v1/stream), whichever
// market it follows: how many each client address has open (at most
// `perAddress`; one more is 429 rate_limited), and ending them all when the
// app closes (a drain: each gets its `closed` event rather than being cut).
// The address is the TCP peer's: behind a proxy, the proxy's.

import type { CloseReason } from '../views/feed.js';

export const DEFAULT_STREAMS_PER_ADDRESS = 10;

interface Stream {
  close(reason: CloseReason): void;
}

export class StreamRegistry {
  private readonly byAddress = new Map<string, number>();
  private readonly open = new Set<Stream>();

  constructor(readonly perAddress: number) {}

  /** Count a stream of `address` in; false (nothing counted) when it has its share open. */
  admit(address: string): boolean {
    const n = this.byAddress.get(address) ?? 0;
    if (n >= this.perAddress) return false;
    this.byAddress.set(address, n + 1);
    return true;
  }

  /** A stream admitted for `address` ended (or never started). */
  release(address: string, stream?: Stream): void {
    if (stream !== undefined) this.open.delete(stream);
    const n = (this.byAddress.get(address) ?? 0) - 1;
    if (n > 0) this.byAddress.set(address, n);
    else this.byAddress.delete(address);
  }

  track(stream: Stream): void {
    this.open.add(stream);
  }

  get size(): number {
    return this.open.size;
  }

  /** End every stream with `reason` (they release themselves). */
  closeAll(reason: CloseReason): void {
    for (const s of [...this.open]) s.close(reason);
  }
}
