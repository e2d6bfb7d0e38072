// The customer commands of `gpux` (issue 24, docs/cli.md) end to end: the
// built command as a child process against a real exchange on PostgreSQL
// and the built agent (simulated provisioner) with its SSH endpoint. The
// provider offers its nodes with `gpux sell`; a buyer reads the book and the
// estimate, buys with --wait until SSH answers, and lists and cancels
// orders. Each command's --json is the API's own JSON; each failure exits
// with its documented code.

import { spawn } from 'node:child_process';
import { join } from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { GPUX, runGpux } from './support/gpux-cli.js';
import type { GpuxRun } from './support/gpux-cli.js';
import { customerCli, envOf as customerEnv, jsonOf } from './support/customer-cli.js';
import { ProviderStack } from './support/provider-stack.js';
import { inTmux } from './support/tmux.js';
import type { Terminal } from './support/tmux.js';
import type { Account } from './support/provider-stack.js';

let stack: ProviderStack;
const ZONE = 'us-east-1';

beforeAll(async () => {
  // The agent lists no sells itself: the provider offers its nodes with `gpux sell`.
  stack = await ProviderStack.start({
    nodes: ['gpu-a', 'gpu-b'],
    askPrice: null,
    label: 'gpux_cli_customer',
  });
});

afterAll(async () => {
  await stack?.close();
});

const gpux = customerCli(() => stack);
const json = jsonOf;
const envOf = (who: Account): NodeJS.ProcessEnv => customerEnv(stack, who);

/**
 * gpux as the buyer on a terminal of its own (tmux): the shell around it
 * prints its exit status (`exit=N`) and keeps the window open.
 */
function onTerminal(args: string[], use: (t: Terminal) => Promise<void>): Promise<void> {
  const env = Object.entries(envOf(stack.buyer)).map(([k, v]) => `${k}=${v ?? ''}`);
  const line = [process.execPath, GPUX, ...args].join(' ');
  // The shell catches Ctrl-C (an empty trap), so it outlives gpux and prints its status.
  const script = `trap : INT; env ${env.join(' ')} ${line}; echo "exit=$?"; exec sleep 600`;
  return inTmux(
    `gpux-cli-${process.pid}`,
    ['sh', '-c', script],
    { columns: 240, rows: 40 },
    (what, condition) => stack.waitFor(what, condition),
    use,
  );
}

/** `gpux buy 8xh100 --zone us-east-1 --hours 2` and `more` as `who`. */
function buy8(who: Account, ...more: string[]): Promise<GpuxRun> {
  return gpux(who, 'buy', '8xh100', '--zone', ZONE, '--hours', '2', ...more);
}

describe('the market and orders', () => {
  it('sell: the provider offers both nodes; the book shows them, as a table and a depth chart', async () => {
    const sell = await gpux(
      stack.provider,
      'sell',
      '16xh100',
      '--zone',
      ZONE,
      '--hours',
      '48',
      '--price',
      '2.50',
    );
    expect(sell.code, sell.stderr).toBe(0);
    expect(sell.stdout).toMatch(/^side +sell limit$/m);
    expect(sell.stdout).toMatch(/^limit price +\$2\.50\/GPU-h$/m);
    await stack.waitForAsks(16);

    const book = await gpux(stack.buyer, 'book', 'h100', ZONE);
    expect(book.code, book.stderr).toBe(0);
    expect(book.stdout).toMatch(/^book +h100 in us-east-1$/m);
    expect(book.stdout).toMatch(/^ask +\$2\.50 +16 +1$/m);
    expect(book.stdout).toMatch(/^ask +\$2\.50 │█+ 16$/m);
    const api = await stack.ok(
      'GET',
      `/v1/orderbook?gpu_type=h100&zone=${ZONE}&depth=10`,
      stack.buyer.token,
    );
    const mine = json(await gpux(stack.buyer, 'book', 'h100', ZONE, '--json'));
    expect({ ...mine, timestamp: '' }).toEqual({ ...api, timestamp: '' });
  });

  it('quote: the estimate, as the API gives it', async () => {
    const q = await gpux(stack.buyer, 'quote', '8xh100', '--zone', ZONE, '--hours', '2');
    expect(q.code, q.stderr).toBe(0);
    expect(q.stdout).toMatch(/^price +\$2\.50\/GPU-h \(average\)$/m);
    // 8 GPUs × 2 h × $2.50 = $40, and the 10% fee.
    expect(q.stdout).toMatch(/^compute +\$40\.00$/m);
    expect(q.stdout).toMatch(/^fee +\$4\.00$/m);
    expect(q.stdout).toMatch(/^total +\$44\.00$/m);
    expect(q.stdout).toMatch(/^fills now +yes$/m);
    const api = await stack.ok(
      'GET',
      `/v1/prices/estimate?gpu_type=h100&gpu_count=8&zone=${ZONE}&duration_hours=2`,
      stack.buyer.token,
    );
    const mine = json(
      await gpux(stack.buyer, 'quote', '8xh100', '--zone', ZONE, '--hours', '2', '--json'),
    );
    expect({ ...mine, timestamp: '' }).toEqual({ ...api, timestamp: '' });

    const short = await gpux(stack.buyer, 'quote', '24xh100', '--zone', ZONE, '--hours', '2');
    expect(short.stdout).toMatch(/^fills now +no: 16 GPUs offered, 8 short$/m);
  });

  it('exit codes: a bad command line 2, no login 3, an unknown order 4', async () => {
    const bad = await gpux(stack.buyer, 'quote', '12xh100', '--zone', ZONE, '--hours', '2');
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/whole nodes of 8/);
    const none = await runGpux(['orders'], { XDG_CONFIG_HOME: join(stack.dir, 'nobody') });
    expect(none.code).toBe(3);
    const missing = await gpux(stack.buyer, 'order', 'ord_nope');
    expect(missing.code).toBe(4);
    expect(missing.stderr).toMatch(/^gpux: not_found: .*\(HTTP 404\)$/m);
  });

  it('buy without a terminal and without --yes is refused before anything is sent (exit 2)', async () => {
    const r = await buy8(stack.buyer);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/run it on a terminal to confirm, or pass --yes/);
    const list = json(await gpux(stack.buyer, 'orders', '--status', 'all', '--json'));
    expect(list['total']).toBe(0);
  });

  it('a limit buy below the asks: --wait gives up at --wait-timeout, leaves it resting (exit 9); cancel', async () => {
    const r = await buy8(
      stack.buyer,
      '--max-price',
      '1.00',
      '--yes',
      '--wait',
      '--wait-timeout',
      '2s',
    );
    expect(r.code, r.stderr).toBe(9);
    const id = /order (ord_\S+) is left pending in the book/.exec(r.stderr)?.[1] ?? '';
    expect(id, r.stderr).not.toBe('');
    expect(r.stderr).toContain(`cancel it with: gpux cancel ${id}`);
    expect(r.stderr).toMatch(/^order \S+: pending, 0 of 8 GPUs filled$/m);

    const open = await gpux(stack.buyer, 'orders');
    expect(open.stdout).toMatch(
      new RegExp(`^${id} +buy +8xh100 +us-east-1 +2 h +\\$1\\.00/GPU-h +pending +0/8 `, 'm'),
    );
    const api = await stack.ok('GET', '/v1/orders', stack.buyer.token);
    expect(json(await gpux(stack.buyer, 'orders', '--json'))).toEqual(api);
    expect(json(await gpux(stack.buyer, 'order', id, '--json'))).toEqual(
      await stack.ok('GET', `/v1/orders/${id}`, stack.buyer.token),
    );

    const cancel = await gpux(stack.buyer, 'cancel', id);
    expect(cancel.code, cancel.stderr).toBe(0);
    expect(cancel.stdout).toMatch(/^status +cancelled$/m);
    expect(cancel.stdout).toMatch(/^cancelled +8 GPUs unfilled$/m);
  });

  it('book --watch --json follows the feed: a snapshot, then the level a new order makes', async () => {
    const child = spawn(process.execPath, [GPUX, 'book', 'h100', ZONE, '--watch', '--json'], {
      env: { ...process.env, ...envOf(stack.buyer) },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (b: Buffer) => (out += b.toString()));
    const events = (): { type: string; price?: number; side?: string; gpus?: number }[] =>
      out
        .split('\n')
        .filter((l) => l !== '')
        .map((l) => JSON.parse(l) as { type: string });
    try {
      await stack.waitFor('the snapshot', () => events().some((e) => e.type === 'snapshot'));
      const buy = await buy8(stack.buyer, '--max-price', '1.50', '--yes', '--json');
      const id = json(buy)['order_id'] as string;
      await stack.waitFor('the bid level', () =>
        events().some(
          (e) => e.type === 'level' && e.side === 'bid' && e.price === 1.5 && e.gpus === 8,
        ),
      );
      expect((await gpux(stack.buyer, 'cancel', id)).code).toBe(0);
    } finally {
      child.kill('SIGINT');
    }
  });

  it('on a terminal, buy asks: n buys nothing, y places the order (tmux)', async () => {
    await onTerminal(
      ['buy', '8xh100', '--zone', ZONE, '--hours', '2', '--max-price', '1.00'],
      async (t) => {
        await stack.waitFor('the question', () =>
          /Buy 8xh100 in us-east-1 for 2 h for about \$44\.00\? \[y\/N\]\s*$/m.test(t.pane()),
        );
        expect(t.pane()).toMatch(/^total +\$44\.00$/m);
        await t.typed('n', /^exit=0$/m);
        expect(t.pane()).toMatch(/^gpux: nothing done$/m);
      },
    );
    const pending = async (): Promise<{ order_id: string }[]> =>
      jsonOf(await gpux(stack.buyer, 'orders', '--status', 'pending', '--json'))['orders'] as {
        order_id: string;
      }[];
    expect(await pending()).toEqual([]);
    await onTerminal(
      ['buy', '8xh100', '--zone', ZONE, '--hours', '2', '--max-price', '1.00'],
      async (t) => {
        await stack.waitFor('the question', () => /\[y\/N\]\s*$/m.test(t.pane()));
        await t.typed('y', /^exit=0$/m);
        expect(t.pane()).toMatch(/^status +pending$/m);
      },
    );
    const [order, ...more] = await pending();
    expect(more).toEqual([]);
    expect((await gpux(stack.buyer, 'cancel', order?.order_id ?? '')).code).toBe(0);
  });

  it('Ctrl-C during buy --wait leaves the order resting, says how to cancel it, exits 130 (tmux)', async () => {
    const args = [
      'buy',
      '8xh100',
      '--zone',
      ZONE,
      '--hours',
      '2',
      '--max-price',
      '1.00',
      '--yes',
      '--wait',
    ];
    let id = '';
    await onTerminal(args, async (t) => {
      await stack.waitFor('the order followed', () =>
        /^order ord_\S+: pending, 0 of 8 GPUs filled$/m.test(t.pane()),
      );
      await t.pressed('C-c', /^exit=130$/m);
      const said =
        /^gpux: interrupted: order (ord_\S+) is left pending in the book \(0 of 8 GPUs filled\); cancel it with: gpux cancel (ord_\S+)$/m.exec(
          t.pane(),
        );
      expect(said, t.pane()).not.toBeNull();
      id = said?.[1] ?? '';
      expect(said?.[2]).toBe(id);
    });
    expect(jsonOf(await gpux(stack.buyer, 'order', id, '--json'))['status']).toBe('pending');
    expect((await gpux(stack.buyer, 'cancel', id)).code).toBe(0);
  });

  it('buy --wait --yes: the estimate on stderr, the order followed until its lease answers SSH', async () => {
    const r = await buy8(stack.buyer, '--yes', '--wait');
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toMatch(/^total +\$44\.00$/m);
    expect(r.stderr).toMatch(/^order \S+: filled, 8 of 8 GPUs filled$/m);
    expect(r.stderr).toMatch(/^lease lse_\S+: active; SSH answers at \S+@127\.0\.0\.1:\d+$/m);
    expect(r.stdout).toMatch(/^status +filled$/m);
    expect(r.stdout).toMatch(/^ {2}gpux ssh lse_\S+$/m);
  });

  it('clusters: the provider sees its nodes online, its lease sold and its earnings; --json is the API’s', async () => {
    const r = await gpux(stack.provider, 'clusters');
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(
      new RegExp(`^${stack.clusterId} +h100/${ZONE} +\\S+ +online +\\d+s ago`, 'm'),
    );
    expect(r.stdout).toMatch(/^earned \$\d+\.\d\d, paid out none, balance \$\d+\.\d\d$/m);
    const api = await stack.ok('GET', '/v1/clusters', stack.provider.token);
    const mine = json(await gpux(stack.provider, 'clusters', '--json'));
    expect({ ...mine, at: '' }).toMatchObject({
      ...api,
      at: '',
      clusters: expect.any(Array) as unknown,
    });
    const one = await gpux(stack.provider, 'cluster', stack.clusterId);
    expect(one.code, one.stderr).toBe(0);
    expect(one.stdout).toMatch(/^lse_\S+ +active +8 /m);
    expect(one.stdout).not.toContain(stack.buyer.accountId);
    // A buyer's token has no provider scope: exit 3.
    expect((await gpux(stack.buyer, 'clusters')).code).toBe(3);
  });
});
