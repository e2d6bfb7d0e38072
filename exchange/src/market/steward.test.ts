import { describe, expect, it } from 'vitest';

import { SILENT_LOGGER } from '../logger.js';
import { OwnershipLost } from './ownership.js';
import type { Acquisition, Holder } from './ownership.js';
import { Steward } from './steward.js';

const HOLDER: Holder = {
  instanceId: 'exchange',
  host: 'other',
  hostKey: null,
  pid: 7,
  url: null,
  epoch: 3,
  leaseRemainingMs: 1000,
};

/** A record of the books that the test decides: held by another, free, or taken from us. */
class Books {
  free = false;
  taken = false;
  renewals = 0;
  released = 0;
  readonly leaseMs = 3000;
  /** While set, an acquisition waits for it. */
  gate: Promise<void> | undefined;
  async tryAcquire(): Promise<Acquisition> {
    await this.gate;
    if (!this.free) return { acquired: false, holder: HOLDER };
    this.free = false;
    this.taken = false;
    return { acquired: true, epochs: new Map([['h100/us-west-1', 4]]) };
  }
  renew(): Promise<void> {
    this.renewals++;
    return this.taken ? Promise.reject(new OwnershipLost('taken')) : Promise.resolve();
  }
  release(): Promise<void> {
    this.released++;
    return Promise.resolve();
  }
  forget(): void {}
}

function until(cond: () => boolean): Promise<void> {
  return new Promise((resolve) => {
    const t = setInterval(() => {
      if (cond()) {
        clearInterval(t);
        resolve();
      }
    }, 2);
  });
}

function steward(books: Books, clock = { t: 0 }) {
  const events: string[] = [];
  const s = new Steward<string>(
    books,
    {
      start: () => {
        events.push('start');
        return Promise.resolve(`owned-${events.length}`);
      },
      stop: (_owned, why) => {
        events.push(`stop:${why}`);
        return Promise.resolve();
      },
    },
    {
      logger: SILENT_LOGGER,
      renewEveryMs: 5,
      pollEveryMs: 5,
      onStandby: () => events.push('standby'),
      now: () => clock.t,
    },
  );
  return { s, events, clock };
}

describe('Steward (docs/ownership.md)', () => {
  it('stands by while another holds the books, saying so once, then takes them and serves', async () => {
    const books = new Books();
    const { s, events } = steward(books);
    s.run();
    await until(() => events.length > 0);
    await new Promise((r) => setTimeout(r, 30));
    expect(events).toEqual(['standby']);
    expect(s.serving()).toBe(false);
    books.free = true;
    await expect(s.first).resolves.toBe('owned-2');
    expect(s.serving()).toBe(true);
    await s.close();
    expect(events).toEqual(['standby', 'start', 'stop:closing']);
    expect(books.released).toBe(1);
  });

  it('serves only while the lease it last renewed runs by its own clock (a paused process answers nothing)', async () => {
    const books = new Books();
    books.free = true;
    const { s, clock } = steward(books);
    s.run();
    await s.first;
    expect(s.serving()).toBe(true);
    // As if the process slept past its lease: no renewal has run since.
    clock.t += books.leaseMs;
    expect(s.serving()).toBe(false);
    expect(s.current()).toBeUndefined();
    // The next renewal gets through: it serves again.
    const n = books.renewals;
    await until(() => books.renewals > n + 1);
    expect(s.serving()).toBe(true);
    await s.close();
  });

  it('steps down when a renewal finds another owner, and stands by again', async () => {
    const books = new Books();
    books.free = true;
    const { s, events } = steward(books);
    s.run();
    await s.first;
    books.taken = true;
    await until(() => events.includes('stop:lost'));
    expect(s.serving()).toBe(false);
    await until(() => events.filter((e) => e === 'standby').length === 1);
    await s.close();
    expect(events).toEqual(['start', 'stop:lost', 'standby']);
    // It did not hold the books when it closed: nothing to release.
    expect(books.released).toBe(0);
  });

  it('steps down at once when a write batch is fenced', async () => {
    const books = new Books();
    books.free = true;
    const { s, events } = steward(books);
    s.run();
    await s.first;
    s.lose();
    expect(s.serving()).toBe(false);
    await until(() => events.includes('stop:lost'));
    await s.close();
  });

  it('renews the lease while the owned part is still starting (a slow first connection to NATS)', async () => {
    const books = new Books();
    books.free = true;
    let finish: () => void = () => undefined;
    const s = new Steward<string>(
      books,
      {
        start: () => new Promise<string>((resolve) => (finish = () => resolve('late'))),
        stop: () => Promise.resolve(),
      },
      { logger: SILENT_LOGGER, renewEveryMs: 5, pollEveryMs: 5 },
    );
    s.run();
    await until(() => books.renewals >= 3);
    expect(s.serving()).toBe(false);
    finish();
    await expect(s.first).resolves.toBe('late');
    expect(s.serving()).toBe(true);
    await s.close();
  });

  it('a start that fails releases the books and rejects the first ownership', async () => {
    const books = new Books();
    books.free = true;
    const s = new Steward<string>(
      books,
      { start: () => Promise.reject(new Error('NATS is down')), stop: () => Promise.resolve() },
      { logger: SILENT_LOGGER, renewEveryMs: 5, pollEveryMs: 5 },
    );
    s.run();
    await expect(s.first).rejects.toThrow('NATS is down');
    expect(books.released).toBe(1);
    await s.close();
  });

  it('closed while an acquisition is under way: the books are given back at once, nothing starts', async () => {
    const books = new Books();
    books.free = true;
    let acquired: () => void = () => undefined;
    books.gate = new Promise<void>((r) => (acquired = r));
    const { s, events } = steward(books);
    s.run();
    const closing = s.close();
    acquired();
    await closing;
    expect(events).toEqual([]);
    expect(books.released).toBe(1);
  });

  it('closed while standing by: the first ownership rejects, nothing is released', async () => {
    const books = new Books();
    const { s } = steward(books);
    s.run();
    await s.close();
    await expect(s.first).rejects.toThrow(/closed before it owned/);
    expect(books.released).toBe(0);
  });
});
