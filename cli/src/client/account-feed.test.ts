// The account's events as `gpux events` reads them
// (docs/api/account-events.md): from the number given on, in order; the
// stream opened again after it ends with Last-Event-ID set to the last
// number handled (none missed, none shown twice); a gap said and skipped;
// without --watch it stops at the account's last event; a refusal that a
// reconnect cannot mend ends it.

import { describe, expect, it } from 'vitest';

import { followAccount, headOf } from './account-feed.js';
import type { FollowAccount, OpenAccountStream } from './account-feed.js';
import type { FeedEvent } from './book-feed.js';
import { ApiError, CliError, EXIT } from './exit.js';
import type { AccountEvent } from './render-data.js';

const ready = (seq: number): FeedEvent => ({ event: 'ready', id: String(seq), data: { seq } });
const event = (seq: number, type = 'order.filled'): FeedEvent => ({
  event: type,
  id: String(seq),
  data: { id: `evt_${seq}`, seq, type, created_at: '2026-11-27T00:00:00Z', data: {} },
});

async function* stream(...events: FeedEvent[]): AsyncGenerator<FeedEvent> {
  for (const e of events) yield e;
  await Promise.resolve();
}

/** A stream that answers each open with the next script (called with Last-Event-ID). */
function scripted(scripts: ((lastId: number | undefined) => AsyncIterable<FeedEvent>)[]): {
  open: OpenAccountStream;
  opened: (number | undefined)[];
} {
  const opened: (number | undefined)[] = [];
  return {
    opened,
    open: (lastId) => {
      opened.push(lastId);
      const next = scripts.shift();
      if (next === undefined) return Promise.reject(new CliError('no more', EXIT.server));
      return Promise.resolve(next(lastId));
    },
  };
}

async function run(
  o: Partial<FollowAccount> & Pick<FollowAccount, 'open'>,
  stop = new AbortController(),
): Promise<{ seqs: (number | null)[]; gaps: string[]; failures: unknown[] }> {
  const seqs: (number | null)[] = [];
  const gaps: string[] = [];
  const failures: unknown[] = [];
  await followAccount({
    signal: stop.signal,
    after: undefined,
    event: (e: AccountEvent) => seqs.push(e.seq),
    gap: (from, to) => gaps.push(`${from}-${to}`),
    pause: () => Promise.resolve(),
    failed: (e) => {
      failures.push(e);
      if (failures.length > 5) stop.abort();
    },
    ...o,
  });
  return { seqs, gaps, failures };
}

describe('headOf', () => {
  it("is the ready event's number of a stream opened without Last-Event-ID", async () => {
    const s = scripted([() => stream(ready(41), event(42))]);
    expect(await headOf(s.open)).toBe(41);
    expect(s.opened).toEqual([undefined]);
  });
});

describe('followAccount', () => {
  it('reads from `after` to `until`, then stops without opening again', async () => {
    const s = scripted([() => stream(ready(2), event(3), event(4), event(5), event(6))]);
    const r = await run({ open: s.open, after: 2, until: 5 });
    expect(r.seqs).toEqual([3, 4, 5]);
    expect(s.opened).toEqual([2]);
  });

  it('after a dropped stream opens again after the last event handled; repeats are skipped', async () => {
    const stop = new AbortController();
    const s = scripted([
      () => stream(ready(0), event(1), event(2)),
      () =>
        stream(ready(2), event(2), event(3), {
          event: 'closed',
          id: undefined,
          data: { type: 'closed' },
        }),
      () => {
        stop.abort();
        return stream(ready(3));
      },
    ]);
    const r = await run({ open: s.open, after: 0 }, stop);
    expect(r.seqs).toEqual([1, 2, 3]);
    expect(s.opened).toEqual([0, 2, 3]);
  });

  it('live (no `after`): goes on from the ready event, and resumes from it', async () => {
    const stop = new AbortController();
    const s = scripted([
      () => stream(ready(9)),
      () => {
        stop.abort();
        return stream(ready(9), event(10));
      },
    ]);
    const r = await run({ open: s.open }, stop);
    expect(s.opened).toEqual([undefined, 9]);
    expect(r.seqs).toEqual([]);
  });

  it('a gap is said, and the events after it are read', async () => {
    const s = scripted([
      () =>
        stream(
          ready(0),
          { event: 'gap', id: undefined, data: { from: 1, to: 4 } },
          { event: 'heartbeat', id: undefined, data: { seq: 5 } },
          event(5),
        ),
    ]);
    const r = await run({ open: s.open, after: 0, until: 5 });
    expect(r).toMatchObject({ seqs: [5], gaps: ['1-4'] });
  });

  it('watching, a failure to reopen is shown and tried again', async () => {
    const stop = new AbortController();
    const down = new CliError('cannot reach the exchange', EXIT.server);
    let calls = 0;
    const open: OpenAccountStream = (lastId) => {
      calls++;
      if (calls === 1) return Promise.resolve(stream(ready(0), event(1)));
      if (calls === 2) return Promise.reject(down);
      stop.abort();
      return Promise.resolve(stream(ready(lastId ?? -1), event(2)));
    };
    const r = await run({ open, after: 0 }, stop);
    expect(r.failures).toEqual([down]);
    expect(r.seqs).toEqual([1]);
  });

  it('the first open failing, a 4xx refusal, or any failure without --watch ends it', async () => {
    const refused = new ApiError(400, 'invalid_request', 'past the last event', [], null);
    await expect(run({ open: () => Promise.reject(refused), after: 9 })).rejects.toBe(refused);
    const down = new CliError('cannot reach the exchange', EXIT.server);
    let calls = 0;
    const open: OpenAccountStream = () =>
      ++calls === 1 ? Promise.resolve(stream(ready(0), event(1))) : Promise.reject(down);
    await expect(run({ open, after: 0, until: 3 })).rejects.toBe(down);
    calls = 0;
    const forbidden = new ApiError(403, 'forbidden', 'no read scope', [], null);
    const revoked: OpenAccountStream = () =>
      ++calls === 1 ? Promise.resolve(stream(ready(0))) : Promise.reject(forbidden);
    await expect(run({ open: revoked, after: 0 })).rejects.toBe(forbidden);
  });
});
