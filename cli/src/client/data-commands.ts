// `gpux candles|events`: the data out of the exchange (issue 22) as a
// customer reads it: a book's candles (GET /v1/candles, docs/api/orders.md)
// and the account's own events (GET /v1/account/stream,
// docs/api/account-events.md), the last ones or followed live with --watch.

import { BOOK } from './admin-market.js';
import type { Query } from './api.js';
import { sseEvents } from './book-feed.js';
import type { FeedEvent } from './book-feed.js';
import { followAccount, headOf } from './account-feed.js';
import type { OpenAccountStream } from './account-feed.js';
import { endpoint, given, untilInterrupted } from './command.js';
import type { Context, Input, Leaf } from './command.js';
import { CliError, EXIT, UsageError } from './exit.js';
import { bookOf } from './market-commands.js';
import { isoTime, wholeNumber } from './parse.js';
import { eventLine, showCandles } from './render-data.js';

type Granularity = Query<'/v1/candles'>['granularity'];
export const GRANULARITIES = [
  '60',
  '300',
  '900',
  '3600',
  '21600',
  '86400',
] as const satisfies readonly `${Granularity}`[];

/** Candles shown without --start: the last this many intervals. */
export const DEFAULT_INTERVALS = 24;

/**
 * The range of a candles request, `last` intervals long (intervals are
 * aligned on the epoch: docs/api/orders.md): from the one holding --start,
 * up to now at most (then without `end`, so the interval in progress is
 * included); or the last ones before --end; or the last ones up to now.
 * --start and --end both given: as they are.
 */
export function candleRange(
  granularity: number,
  last: number,
  given: { start?: string | undefined; end?: string | undefined },
  now: number,
): { start: string; end?: string } {
  const span = granularity * 1000;
  const iso = (ms: number): string => new Date(ms).toISOString();
  if (given.start !== undefined) {
    if (given.end !== undefined) return { start: given.start, end: given.end };
    const end = Math.floor(Date.parse(given.start) / span) * span + last * span;
    return end > now ? { start: given.start } : { start: given.start, end: iso(end) };
  }
  if (given.end !== undefined) {
    const end = Math.ceil(Date.parse(given.end) / span) * span;
    return { start: iso(end - last * span), end: given.end };
  }
  return { start: iso(now - (last - 1) * span) };
}

const candles = endpoint({
  name: 'candles',
  args: BOOK,
  summary: "a book's open, high, low and close per interval, with the GPUs and trades",
  example: 'gpux candles h100 us-west-1 --granularity 300 --last 12',
  options: [
    {
      flags: '--granularity <seconds>',
      description: 'seconds per candle (default 3600)',
      choices: GRANULARITIES,
    },
    {
      flags: '--last <n>',
      description: `how many intervals: from --start on (up to now at most), else the last before --end or now (1 to 300; default ${DEFAULT_INTERVALS})`,
      parse: wholeNumber(1, 300),
    },
    {
      flags: '--start <time>',
      description: 'from the interval holding this time, ISO 8601 with a zone',
      parse: isoTime,
    },
    {
      flags: '--end <time>',
      description:
        'up to this time, excluded, ISO 8601 with a zone (default: now, its interval included)',
      parse: isoTime,
    },
  ],
  call: (c, a) => {
    const granularity = Number(a.opt('granularity') ?? '3600') as Granularity;
    const range = candleRange(
      granularity,
      a.opt<number>('last') ?? DEFAULT_INTERVALS,
      { start: a.opt('start'), end: a.opt('end') },
      Date.now(),
    );
    const query = given<Query<'/v1/candles'>>({ ...bookOf(a), granularity, ...range });
    return c.GET('/v1/candles', { params: { query } });
  },
  show: showCandles,
});

/** Events shown without --since: the last this many. */
export const DEFAULT_EVENTS = 20;

/** Opens GET /v1/account/stream as the login's account, after `lastId` when given. */
function accountStream(ctx: Context): OpenAccountStream {
  const api = ctx.api();
  return async (lastId, signal): Promise<AsyncIterable<FeedEvent>> => {
    const headers: Record<string, string> = { accept: 'text/event-stream' };
    if (lastId !== undefined) headers['last-event-id'] = String(lastId);
    const body = await api.read(
      api.client.GET('/v1/account/stream', { parseAs: 'stream', headers, signal }),
    );
    if (body === null) throw new CliError('the account stream had no body', EXIT.server);
    return sseEvents(body);
  };
}

function events(ctx: Context, a: Input): Promise<void> {
  const open = accountStream(ctx);
  const watching = a.opt<boolean>('watch') === true;
  const since = a.opt<number>('since');
  return untilInterrupted(ctx, async (f) => {
    // The account's last event number: where the last events end, and, without --watch, where to stop.
    const head = await headOf(open);
    if (since !== undefined && since > head) {
      throw new UsageError(`--since ${since}: the account's last event is ${head}`);
    }
    await followAccount({
      ...f,
      open,
      after: since ?? Math.max(0, head - DEFAULT_EVENTS),
      until: watching ? undefined : head,
      event: (e) => ctx.io.out(ctx.json ? `${JSON.stringify(e)}\n` : eventLine(e, ctx.style)),
      gap: (from, to) => ctx.io.err(`gpux: events ${from} to ${to} are no longer kept\n`),
    });
  });
}

const eventsLeaf: Leaf = {
  kind: 'leaf',
  name: 'events',
  summary:
    "your account's events (fills, cancels, leases, money), numbered; --watch: live until Ctrl-C",
  example: 'gpux events --since 40 --watch',
  options: [
    {
      flags: '--since <n>',
      description: `after event number n (0: every event still kept; default: the last ${DEFAULT_EVENTS})`,
      parse: wholeNumber(0, Number.MAX_SAFE_INTEGER),
    },
    {
      flags: '--watch',
      description:
        'then follow the stream (GET /v1/account/stream) until Ctrl-C, resuming after a dropped connection',
    },
  ],
  run: events,
};

export const DATA_COMMANDS: readonly Leaf[] = [candles, eventsLeaf];
