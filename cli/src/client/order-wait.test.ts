// buy --wait against fakes of the API and of the SSH probe: each lease is
// ready only when active AND its endpoints answer SSH; a resting order is
// followed to the deadline; Ctrl-C ends the wait; progress is said once
// per change.

import { describe, expect, it } from 'vitest';

import type { Schemas } from './api.js';
import { waitForOrder } from './order-wait.js';
import type { WaitDeps } from './order-wait.js';

type Order = Schemas['Order'];
type Lease = Schemas['LeaseDetail'];

const ORDER: Order = {
  order_id: 'ord_1',
  side: 'buy',
  gpu_type: 'h100',
  gpu_count: 16,
  zone: 'us-west-1',
  duration_hours: 2,
  order_type: 'market',
  status: 'filled',
  filled_gpus: 16,
  allow_partial: false,
  start_time: '2026-11-27T00:00:00Z',
  created_at: '2026-11-27T00:00:00Z',
  matches: [
    { matched_at: '', gpus: 8, price: 2.5, lease_id: 'lse_a' },
    { matched_at: '', gpus: 8, price: 2.6, lease_id: 'lse_b' },
  ],
};

function lease(id: string, status: Lease['status'], endpoints: string[] = []): Lease {
  return {
    lease_id: id,
    customer_id: 'acc_1',
    order_id: 'ord_1',
    gpu_type: 'h100',
    gpu_count: 8,
    instance_type: '8xh100',
    zone: 'us-west-1',
    status,
    rate: 2.5,
    start_time: '',
    end_time: '',
    created_at: '',
    cluster_id: 'cls_1',
    namespace: 'gpux-lse-a',
    nodes: ['gpu-a'],
    node_status: [],
    ssh_endpoints: endpoints,
    ssh_host_keys: [],
    state: status,
    hourly_cost: 20,
    ssh_access: endpoints.map((endpoint) => {
      const [user = '', rest = ''] = endpoint.split('@');
      const [host = '', port = '0'] = rest.split(':');
      return {
        hostname: 'gpu-a',
        endpoint,
        user,
        host,
        port: Number(port),
        host_keys: [],
        known_hosts: [],
      };
    }),
  };
}

/** Fakes whose answers come from scripts, one entry a read (the last repeats). */
function fakes(script: {
  orders: Order[];
  leases: Record<string, Lease[]>;
  answers?: boolean[];
}): WaitDeps & { lines: string[]; clock: number } {
  const next = <T>(list: T[]): T => (list.length > 1 ? (list.shift() as T) : (list[0] as T));
  const deps = {
    lines: [] as string[],
    clock: 0,
    readOrder: () => Promise.resolve(next(script.orders)),
    readLease: (id: string) => Promise.resolve(next(script.leases[id] ?? [])),
    answers: () => Promise.resolve(next(script.answers ?? [true])),
    progress: (l: string) => void deps.lines.push(l),
    sleep: (ms: number) => {
      deps.clock += ms;
      return Promise.resolve();
    },
    now: () => deps.clock,
  };
  return deps;
}

describe('waitForOrder', () => {
  it('waits for every lease of the fill to be active and to answer SSH', async () => {
    const deps = fakes({
      orders: [ORDER],
      leases: {
        lse_a: [lease('lse_a', 'provisioning'), lease('lse_a', 'active', ['u@h:2222'])],
        lse_b: [lease('lse_b', 'active', ['u@h:2223'])],
      },
      answers: [false, false, true],
    });
    const w = await waitForOrder('ord_1', 60_000, new AbortController().signal, deps);
    expect(w.outcome).toBe('ready');
    expect([...w.ready].sort()).toEqual(['lse_a', 'lse_b']);
    expect(deps.lines).toEqual([
      'order ord_1: filled, 16 of 16 GPUs filled',
      'lease lse_a: provisioning, waiting for its SSH endpoints',
      'lease lse_b: active, waiting for SSH to answer',
      'lease lse_a: active, waiting for SSH to answer',
      'lease lse_b: active; SSH answers at u@h:2223',
      'lease lse_a: active; SSH answers at u@h:2222',
    ]);
  });

  it('a resting order is followed until the deadline, then handed back as it is', async () => {
    const resting = { ...ORDER, status: 'pending' as const, filled_gpus: 0, matches: [] };
    const deps = fakes({ orders: [resting], leases: {} });
    const w = await waitForOrder('ord_1', 5_000, new AbortController().signal, deps);
    expect(w.outcome).toBe('timeout');
    expect(w.order.status).toBe('pending');
    expect(deps.clock).toBe(5_000);
    expect(deps.lines).toEqual(['order ord_1: pending, 0 of 16 GPUs filled']);
  });

  it('Ctrl-C (the signal) ends the wait', async () => {
    const resting = { ...ORDER, status: 'pending' as const, filled_gpus: 0, matches: [] };
    const stop = new AbortController();
    const deps = fakes({ orders: [resting], leases: {} });
    deps.sleep = () => {
      stop.abort();
      return Promise.resolve();
    };
    const w = await waitForOrder('ord_1', 600_000, stop.signal, deps);
    expect(w.outcome).toBe('interrupted');
  });

  it('a failed lease settles (it never answers); an order cancelled without fills is ready with none', async () => {
    const deps = fakes({
      orders: [{ ...ORDER, matches: [ORDER.matches?.[0] as never] }],
      leases: { lse_a: [lease('lse_a', 'failed')] },
    });
    const w = await waitForOrder('ord_1', 60_000, new AbortController().signal, deps);
    expect(w.outcome).toBe('ready');
    expect(w.leases.map((l) => l.status)).toEqual(['failed']);
    const none = fakes({ orders: [{ ...ORDER, status: 'cancelled', matches: [] }], leases: {} });
    expect((await waitForOrder('ord_1', 1, new AbortController().signal, none)).outcome).toBe(
      'ready',
    );
  });
});
