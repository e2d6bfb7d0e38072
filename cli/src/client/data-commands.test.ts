// `gpux candles|events|webhooks` run in-process against a fake fetch: what
// each sends (the candles' range, the account stream's token and
// Last-Event-ID, a webhook's body), and a bad command line refused with
// exit 2 before anything is sent.

import { describe, expect, it } from 'vitest';

import type { Io } from './command.js';
import { runClient } from './program.js';

const ENV = { GPUX_URL: 'http://exchange.test', GPUX_API_TOKEN: 'gpux_test' };
const NOW = Date.parse('2026-11-27T10:30:00Z');

interface Sent {
  readonly method: string;
  readonly url: URL;
  readonly headers: Headers;
  readonly body: unknown;
}

async function gpux(
  argv: string[],
  reply: (r: Request) => Response,
): Promise<{ code: number; stdout: string; stderr: string; sent: Sent[] }> {
  let stdout = '';
  let stderr = '';
  const sent: Sent[] = [];
  const io: Io = {
    out: (t) => (stdout += t),
    err: (t) => (stderr += t),
    env: { ...ENV, XDG_CONFIG_HOME: '/nonexistent' },
    stdoutIsTty: false,
    stdinIsTty: false,
    stderrIsTty: false,
    confirm: () => Promise.resolve(false),
    onInterrupt: () => () => undefined,
    readSecret: () => Promise.resolve(''),
    now: () => NOW,
    fetch: async (r) => {
      const text = await r.clone().text();
      sent.push({
        method: r.method,
        url: new URL(r.url),
        headers: r.headers,
        body: text === '' ? undefined : JSON.parse(text),
      });
      return reply(r);
    },
  };
  const code = await runClient(argv, io, []);
  return { code, stdout, stderr, sent };
}

const json = (body: unknown, status = 200): Response =>
  new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json' } });

/** An event stream of `events` ([name, id, data]) that then ends. */
const sse = (...events: [string, number | undefined, unknown][]): Response =>
  new Response(
    events
      .map(
        ([e, id, d]) =>
          `${id === undefined ? '' : `id: ${id}\n`}event: ${e}\ndata: ${JSON.stringify(d)}\n\n`,
      )
      .join(''),
    { headers: { 'content-type': 'text/event-stream' } },
  );

const event = (seq: number): [string, number, unknown] => [
  'order.cancelled',
  seq,
  { id: `evt_${seq}`, seq, type: 'order.cancelled', created_at: '2026-11-27T10:00:00Z', data: {} },
];

describe('gpux candles', () => {
  it('asks for the last 24 hourly intervals by default', async () => {
    const r = await gpux(['candles', 'h100', 'us-west-1', '--json'], () => json({ candles: [] }));
    expect(r.code, r.stderr).toBe(0);
    const q = r.sent[0]?.url.searchParams;
    expect(r.sent[0]?.url.pathname).toBe('/v1/candles');
    expect(q?.get('granularity')).toBe('3600');
    expect(q?.get('gpu_type')).toBe('h100');
    expect(Date.parse(q?.get('start') ?? '')).toBeGreaterThan(Date.now() - 24 * 3_600_000);
    expect(q?.has('end')).toBe(false);
  });

  it.each([
    [['candles', 'h100', 'us-west-1', '--granularity', '120'], /Allowed choices are 60, 300/],
    [['candles', 'h100', 'us-west-1', '--last', '301'], /from 1 to 300/],
    [['candles', 'h100', 'us-west-1', '--start', 'yesterday'], /ISO 8601/],
    [['webhooks', 'create', 'https://h.example', '--events', 'order.nope'], /each must be one of/],
    [['webhooks', 'create', 'https://h.example'], /required option '--events <kinds>'/],
    [['events', '--since', '-1'], /whole number/],
  ])('%j is refused before anything is sent', async (argv, message) => {
    const r = await gpux(argv, () => json({}));
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(message);
    expect(r.sent).toEqual([]);
  });
});

describe('gpux events', () => {
  it('learns the last event, then reads the last 20 with the token and Last-Event-ID, and ends', async () => {
    const r = await gpux(['events', '--json'], (req) =>
      req.headers.get('last-event-id') === null
        ? sse(['ready', 22, { seq: 22 }], event(23))
        : sse(['ready', 2, { seq: 2 }], ...[3, 4, 22, 23].map(event)),
    );
    expect(r.code, r.stderr).toBe(0);
    expect(r.sent.map((s) => [s.url.pathname, s.headers.get('last-event-id')])).toEqual([
      ['/v1/account/stream', null],
      ['/v1/account/stream', '2'],
    ]);
    expect(r.sent.every((s) => s.headers.get('authorization') === 'Bearer gpux_test')).toBe(true);
    expect(
      r.stdout
        .split('\n')
        .filter((l) => l !== '')
        .map((l) => (JSON.parse(l) as { seq: number }).seq),
    ).toEqual([3, 4, 22]);
  });

  it('--since past the last event exits 2', async () => {
    const r = await gpux(['events', '--since', '9'], () => sse(['ready', 4, { seq: 4 }]));
    expect(r.code).toBe(2);
    expect(r.stderr).toBe("gpux: --since 9: the account's last event is 4\n");
  });
});

describe('gpux webhooks', () => {
  it('create sends the URL and each kind once; the secret is printed with the note', async () => {
    const r = await gpux(
      [
        'webhooks',
        'create',
        'https://h.example/x',
        '--events',
        'order.filled,lease.active',
        '--events',
        'order.filled',
      ],
      () =>
        json(
          {
            id: 'whk_1',
            url: 'https://h.example/x',
            events: ['order.filled', 'lease.active'],
            created_at: '2026-11-27T10:00:00Z',
            secret: 'whsec_s',
          },
          201,
        ),
    );
    expect(r.code, r.stderr).toBe(0);
    expect(r.sent[0]).toMatchObject({
      method: 'POST',
      body: { url: 'https://h.example/x', events: ['order.filled', 'lease.active'] },
    });
    expect(r.stdout).toMatch(/^secret +whsec_s$/m);
    expect(r.stdout).toContain('it is shown this once');
  });

  it('delete, deliveries and test call their endpoints', async () => {
    const calls = [
      [['webhooks', 'delete', 'whk_1'], 'DELETE /v1/webhooks/whk_1'],
      [
        ['webhooks', 'deliveries', 'whk_1', '--limit', '5'],
        'GET /v1/webhooks/whk_1/deliveries?limit=5',
      ],
      [['webhooks', 'test', 'whk_1'], 'POST /v1/webhooks/whk_1/test'],
    ] as const;
    for (const [argv, request] of calls) {
      const r = await gpux([...argv, '--json'], () => json({}));
      expect(r.code, r.stderr).toBe(0);
      expect(`${r.sent[0]?.method} ${r.sent[0]?.url.pathname}${r.sent[0]?.url.search}`).toBe(
        request,
      );
    }
  });
});
