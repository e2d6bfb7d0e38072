// The API commands' command line, run in-process against a fake fetch: a
// bad command line is refused with exit 2 before anything is sent; an
// error answer exits with its documented code; --json prints the API's
// JSON; every operator endpoint of docs/api/openapi.json (tag admin)
// has a command that calls it; and what candles, events (the account
// stream's token and Last-Event-ID) and webhooks send.

import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

import { describe, expect, it } from 'vitest';

import type { Io } from './command.js';
import type { CommandList } from './commands-list.js';
import { runClient } from './program.js';

const ENV = {
  GPUX_URL: 'http://exchange.test',
  GPUX_API_TOKEN: 'gpux_test',
  XDG_CONFIG_HOME: '/nonexistent',
};

interface Run {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
  readonly requests: { method: string; path: string; body: unknown; auth: string | null }[];
  /** Each request's URL (its query) and headers. */
  readonly sent: { url: URL; headers: Headers }[];
}

type Reply = (request: Request) => Response;

const ok = (body: unknown, status = 200): Response =>
  new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json' } });
const failure = (status: number, code: string, headers: Record<string, string> = {}): Response =>
  new Response(JSON.stringify({ data: null, error: { code, message: `${code} happened` } }), {
    status,
    headers: { 'content-type': 'application/json', ...headers },
  });

async function gpux(argv: string[], reply: Reply = () => failure(404, 'not_found')): Promise<Run> {
  let stdout = '';
  let stderr = '';
  const requests: Run['requests'] = [];
  const sent: Run['sent'] = [];
  const io: Io = {
    out: (t) => (stdout += t),
    err: (t) => (stderr += t),
    env: ENV,
    stdoutIsTty: false,
    stdinIsTty: false,
    stderrIsTty: false,
    confirm: () => Promise.resolve(false),
    onInterrupt: () => () => undefined,
    readSecret: () => Promise.resolve(''),
    now: () => 0,
    fetch: async (request) => {
      const text = await request.clone().text();
      requests.push({
        method: request.method,
        path: new URL(request.url).pathname,
        body: text === '' ? undefined : JSON.parse(text),
        auth: request.headers.get('authorization'),
      });
      sent.push({ url: new URL(request.url), headers: request.headers });
      return reply(request);
    },
  };
  const code = await runClient(argv, io, []);
  return { code, stdout, stderr, requests, sent };
}

describe('a bad command line', () => {
  it.each([
    [['admin', 'accounts', 'suspend', 'acc_1'], /required option '--reason <text>'/],
    [['admin', 'accounts', 'suspend', 'acc_1', '--reason', '  '], /must not be blank/],
    [['admin', 'accounts', 'suspend', '--reason', 'x'], /missing required argument 'account-id'/],
    [['admin', 'books', 'halt', 'h100', 'mars-1', '--reason', 'x'], /us-west-1/],
    [['admin', 'accounts', 'adjust', 'acc_1', '--amount', '1.234', '--reason', 'x'], /whole cents/],
    [['admin', 'accounts', 'list', '--limit', '101'], /from 1 to 100/],
    [['admin', 'accounts', 'list', '--status', 'gone'], /Allowed choices are active, suspended/],
    [['admin', 'audit', '--since', 'yesterday'], /ISO 8601/],
    [['balance', '--frobnicate'], /unknown option '--frobnicate'/],
  ])('%j exits 2 and sends nothing', async (argv, message) => {
    const r = await gpux(argv);
    expect({ code: r.code, requests: r.requests }).toEqual({ code: 2, requests: [] });
    expect(r.stderr).toMatch(message);
    expect(r.stderr).toMatch(/^gpux: /);
  });

  it('an unknown command exits 2 with the usage', async () => {
    const r = await gpux(['frobnicate']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/^gpux: no command frobnicate\nusage: gpux <command>/);
  });
});

describe('an answer', () => {
  it.each([
    [404, 'not_found', 4],
    [403, 'forbidden', 3],
    [401, 'unauthorized', 3],
    [409, 'lease_not_active', 5],
    [402, 'insufficient_funds', 6],
    [400, 'invalid_request', 2],
    [503, 'unavailable', 8],
  ])('HTTP %i %s exits %i with the code and message on stderr', async (status, code, exit) => {
    const r = await gpux(['admin', 'leases', 'revoke', 'lse_1', '--reason', 'abuse'], () =>
      failure(status, code),
    );
    expect(r.code).toBe(exit);
    expect(r.stdout).toBe('');
    expect(r.stderr).toBe(`gpux: ${code}: ${code} happened (HTTP ${status})\n`);
    expect(r.requests).toEqual([
      {
        method: 'POST',
        path: '/v1/admin/leases/lse_1/revoke',
        body: { reason: 'abuse' },
        auth: 'Bearer gpux_test',
      },
    ]);
  });

  it('429 exits 7 and says when to retry', async () => {
    const r = await gpux(['balance'], () => failure(429, 'rate_limited', { 'retry-after': '12' }));
    expect(r.code).toBe(7);
    expect(r.stderr).toContain('gpux: rate limited: retry in 12 seconds');
  });

  it("--json prints the API's JSON; without it, the human output", async () => {
    const page = { accounts: [], total: 0, limit: 5, offset: 0 };
    const r = await gpux(
      ['admin', 'accounts', 'list', '--status', 'suspended', '--limit', '5', '--json'],
      () => ok(page),
    );
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual(page);
    expect(r.requests[0]?.path).toBe('/v1/admin/accounts');
    const human = await gpux(['admin', 'accounts', 'list'], () => ok(page));
    expect(human.stdout).toBe('(none)\n');
  });

  it('sends the options given and only those', async () => {
    const seen: string[] = [];
    await gpux(['admin', 'audit', '--action', 'account.suspend', '--target-id', 'acc_1'], (req) => {
      seen.push(new URL(req.url).search);
      return failure(404, 'not_found');
    });
    expect(seen).toEqual(['?action=account.suspend&target_id=acc_1']);
    const created = await gpux(
      [
        'admin',
        'accounts',
        'create',
        '--name',
        'a',
        '--organization',
        'o',
        '--scopes',
        'trade,read',
      ],
      () => failure(400, 'invalid_request'),
    );
    expect(created.requests[0]?.body).toEqual({
      name: 'a',
      organization: 'o',
      scopes: ['trade', 'read'],
    });
  });
});

describe('a provider’s cluster commands (issue 23)', () => {
  const cordoned = {
    cluster: {
      cluster_id: 'cls_1',
      gpu_type: 'h100',
      zone: 'us-west-1',
      cordoned_at: '2026-11-27T05:00:00.000Z',
      cordoned_by: 'provider',
      nodes: [],
    },
    changed: true,
    cancelled_order_ids: ['ord_1', 'ord_2'],
  };

  it('cluster cordon ID [--reason R]: POST /v1/clusters/{id}/cordon, the reason if given', async () => {
    const r = await gpux(['cluster', 'cordon', 'cls_1', '--reason', 'disk swap'], () =>
      ok(cordoned),
    );
    expect(r.code, r.stderr).toBe(0);
    expect(r.requests).toMatchObject([
      { method: 'POST', path: '/v1/clusters/cls_1/cordon', body: { reason: 'disk swap' } },
    ]);
    expect(r.stdout).toMatch(/^cls_1 cordoned since .+, by you: it takes no new sells/m);
    expect(r.stdout).toMatch(/^sells withdrawn: ord_1 ord_2$/m);
    const bare = await gpux(['cluster', 'cordon', 'cls_1', '--json'], () => ok(cordoned));
    expect(bare.requests[0]?.body).toEqual({});
    expect(JSON.parse(bare.stdout)).toEqual(cordoned);
  });

  it('cluster uncordon ID: POST /v1/clusters/{id}/uncordon; an operator’s cordon exits 5', async () => {
    const r = await gpux(['cluster', 'uncordon', 'cls_1'], () => failure(409, 'cluster_cordoned'));
    expect(r.code).toBe(5);
    expect(r.requests).toMatchObject([{ method: 'POST', path: '/v1/clusters/cls_1/uncordon' }]);
    // `gpux cluster ID` is still the cluster's read, its --json its own.
    const read = await gpux(['cluster', 'cls_1', '--json'], () => ok({ cluster: {}, leases: [] }));
    expect(read.requests).toMatchObject([{ method: 'GET', path: '/v1/clusters/cls_1' }]);
    expect(JSON.parse(read.stdout)).toEqual({ cluster: {}, leases: [] });
  });
});

const ADMIN_OPERATIONS = (() => {
  const doc = JSON.parse(
    readFileSync(fileURLToPath(new URL('../../../docs/api/openapi.json', import.meta.url)), 'utf8'),
  ) as { paths: Record<string, Record<string, { tags?: string[] }>> };
  return Object.entries(doc.paths).flatMap(([path, ops]) =>
    Object.entries(ops)
      .filter(([, op]) => op.tags?.includes('admin') === true)
      .map(([method]) => `${method.toUpperCase()} ${path}`),
  );
})();

/** A value for a placeholder of a command line: a choice when there are some. */
function sample(name: string, choices?: readonly string[]): string {
  if (choices !== undefined && choices.length > 0) return choices[0] ?? '';
  if (/gpu-type/.test(name)) return 'h100';
  if (/zone/.test(name)) return 'us-west-1';
  if (/dollars|amount/.test(name)) return '5';
  if (/scopes/.test(name)) return 'trade';
  return 'x1';
}

describe('the admin commands', () => {
  it('call every operator endpoint of docs/api/openapi.json', async () => {
    const list = JSON.parse((await gpux(['commands', '--json'])).stdout) as CommandList;
    const called = new Set<string>();
    for (const c of list.commands.filter((c) => c.command.startsWith('admin ') && !c.group)) {
      const argv = [...c.command.split(' '), ...c.arguments.map((a) => sample(a.name))];
      for (const o of c.options.filter((o) => o.required === true)) {
        argv.push(o.flags.split(' ')[0] ?? '', sample(o.flags, o.choices));
      }
      const r = await gpux(argv);
      expect(r.code, `${argv.join(' ')}\n${r.stderr}`).toBe(4);
      for (const q of r.requests) {
        const op = ADMIN_OPERATIONS.find((o) => {
          const [method, path] = o.split(' ');
          const pattern = new RegExp(`^${(path ?? '').replace(/\{[^}]+\}/g, '[^/]+')}$`);
          return method === q.method && pattern.test(q.path);
        });
        expect(op, `${q.method} ${q.path}`).toBeDefined();
        called.add(op ?? '');
      }
    }
    expect([...called].sort()).toEqual([...ADMIN_OPERATIONS].sort());
  });

  it('each has an example in its help', async () => {
    const list = JSON.parse((await gpux(['commands', '--json'])).stdout) as CommandList;
    for (const c of list.commands) {
      expect(c.example, c.command).toMatch(/^gpux /);
      const help = await gpux([...c.command.split(' '), '--help']);
      expect(help.code, c.command).toBe(0);
      expect(help.stdout, c.command).toContain(`Example:\n  ${c.example ?? ''}`);
    }
  });
});

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

describe('gpux candles, events and webhooks', () => {
  it('asks for the last 24 hourly intervals by default', async () => {
    const r = await gpux(['candles', 'h100', 'us-west-1', '--json'], () => ok({ candles: [] }));
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
    const r = await gpux(argv, () => ok({}));
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(message);
    expect(r.requests).toEqual([]);
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
        ok(
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
    expect(r.requests[0]).toMatchObject({
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
      const r = await gpux([...argv, '--json'], () => ok({}));
      expect(r.code, r.stderr).toBe(0);
      expect(`${r.requests[0]?.method} ${r.sent[0]?.url.pathname}${r.sent[0]?.url.search}`).toBe(
        request,
      );
    }
  });
});
