// `gpux leases|lease|terminate|resell|kubeconfig` and `gpux keys …`
// (docs/api/leases.md, docs/api/accounts.md). terminate and resell show
// first what they would give back and ask (--yes skips; without a terminal
// --yes is needed).

import { readdirSync, readFileSync, existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { basename, delimiter, join, resolve } from 'node:path';

import { every } from './api.js';
import type { Query } from './api.js';
import { YES, byId, canAsk, confirmed, endpoint, given, group, json } from './command.js';
import type { Leaf, Node } from './command.js';
import { CliError, EXIT, UsageError } from './exit.js';
import { merge, renamed } from './kubeconfig.js';
import { fields, money, time } from './output.js';
import { PAGING, isoTime, paging, price } from './parse.js';
import {
  showKey,
  showKeys,
  showLease,
  showLeases,
  showResell,
  showTermination,
  span,
} from './render-leases.js';
import { writePrivate } from './ssh-commands.js';

const LEASE = ['<lease-id>', 'the lease (lse_…)'] as const;
const HOUR = 3_600_000;
/** The platform's fee on a sale (docs/api/leases.md): 10 %. */
const FEE = 0.1;

/** Dollars rounded half-even to the cent, as the exchange rounds money. */
export function cents(dollars: number): number {
  const c = dollars * 100;
  const floor = Math.floor(c);
  const diff = c - floor;
  const eps = 1e-9;
  const whole =
    diff > 0.5 + eps ? floor + 1 : diff < 0.5 - eps ? floor : floor % 2 === 0 ? floor : floor + 1;
  return whole / 100;
}

const STATUSES = every<NonNullable<Query<'/v1/leases'>['status']>>()([
  'provisioning',
  'active',
  'terminated',
  'expired',
  'failed',
  'all',
]);

const leases: Leaf = {
  kind: 'leaf',
  name: 'leases',
  summary: 'your leases with the time each has left (under an hour: highlighted)',
  example: 'gpux leases --status active',
  options: [
    { flags: '--status <status>', description: 'only these', choices: STATUSES },
    { flags: '--order <order-id>', description: 'only the leases of this buy' },
    ...PAGING,
  ],
  async run(ctx, a) {
    const api = ctx.api();
    const query = given<Query<'/v1/leases'>>({
      status: a.opt<Query<'/v1/leases'>['status']>('status'),
      order_id: a.opt('order'),
      ...paging(a),
    });
    const page = await api.read(api.client.GET('/v1/leases', { params: { query } }));
    ctx.io.out(ctx.json ? json(page) : showLeases(page, ctx.style, ctx.io.now()));
  },
};

const lease: Leaf = {
  kind: 'leaf',
  name: 'lease',
  args: [LEASE],
  summary: 'one lease: its nodes, state, time left and SSH endpoints',
  example: 'gpux lease lse_1a2b3c',
  async run(ctx, a) {
    const api = ctx.api();
    const l = await api.read(api.client.GET('/v1/leases/{id}', byId(a.arg(0))));
    ctx.io.out(ctx.json ? json(l) : showLease(l, ctx.style, ctx.io.now()));
  },
};

const terminate: Leaf = {
  kind: 'leaf',
  name: 'terminate',
  args: [LEASE],
  summary: 'end a lease now; shows the refund of the unused time and asks first',
  example: 'gpux terminate lse_1a2b3c',
  options: [YES],
  async run(ctx, a) {
    canAsk(ctx, a, 'terminate ends the lease');
    const api = ctx.api();
    const l = await api.read(api.client.GET('/v1/leases/{id}', byId(a.arg(0))));
    const left = Math.max(0, Date.parse(l.end_time) - ctx.io.now());
    const refund = cents((left * l.hourly_cost) / HOUR);
    ctx.io.err(
      fields(
        [
          ['lease', `${l.lease_id} (${l.instance_type} in ${l.zone}), ${l.state}`],
          ['time left', span(left)],
          ['refund', `about ${money(refund)} (${money(l.hourly_cost)}/h for the time left)`],
        ],
        ctx.style,
      ),
    );
    if (!(await confirmed(ctx, a, `Terminate ${l.lease_id} now?`))) return;
    const t = await api.read(api.client.DELETE('/v1/leases/{id}', byId(l.lease_id)));
    ctx.io.out(ctx.json ? json(t) : showTermination(t, ctx.style));
  },
};

const resell: Leaf = {
  kind: 'leaf',
  name: 'resell',
  args: [LEASE],
  summary: 'offer the rest of a lease in the book; shows first what you would get back',
  example: 'gpux resell lse_1a2b3c --price 2.80 --until 2026-12-01T18:00:00Z',
  options: [
    {
      flags: '--price <dollars>',
      description: 'the lowest price per GPU-hour it sells at',
      parse: price,
      required: true,
    },
    {
      flags: '--from <time>',
      description: 'when a buyer may take over (default now)',
      parse: isoTime,
    },
    {
      flags: '--until <time>',
      description: 'when the offer expires (default the lease end)',
      parse: isoTime,
    },
    { flags: '--immediately', description: 'your access ends at the sale, not at the transfer' },
    YES,
  ],
  async run(ctx, a) {
    canAsk(ctx, a, 'resell offers the lease for sale');
    const api = ctx.api();
    const l = await api.read(api.client.GET('/v1/leases/{id}', byId(a.arg(0))));
    const limit = a.opt<number>('price') as number;
    const fromAt = Math.max(
      ctx.io.now(),
      Date.parse(l.start_time),
      a.opt('from') === undefined ? 0 : Date.parse(a.opt('from') as string),
    );
    const hours = Math.max(0, Date.parse(l.end_time) - fromAt) / HOUR;
    const gross = cents(hours * limit * l.gpu_count);
    const fee = cents(gross * FEE);
    ctx.io.err(
      fields(
        [
          [
            'lease',
            `${l.lease_id} (${l.instance_type} in ${l.zone}), until ${time(l.end_time, ctx.style)}`,
          ],
          [
            'offered',
            `${span(hours * HOUR)} from ${time(new Date(fromAt).toISOString(), ctx.style)}`,
          ],
          [
            'if all sells',
            `you get ${money(gross - fee)} (${money(gross)} at ${money(limit)}/GPU-h, less the 10% fee)`,
          ],
          ['if none sells', `you get nothing back: the lease stays yours until its end`],
        ],
        ctx.style,
      ),
    );
    if (!(await confirmed(ctx, a, `Offer ${l.lease_id} at ${money(limit)}/GPU-h?`))) return;
    const body = given<{
      limit_price: number;
      available_from?: string;
      available_until?: string;
      transfer_immediately?: boolean;
    }>({
      limit_price: limit,
      available_from: a.opt('from'),
      available_until: a.opt('until'),
      transfer_immediately: a.opt<boolean>('immediately'),
    });
    const r = await api.read(
      api.client.POST('/v1/leases/{id}/resell', { ...byId(l.lease_id), body }),
    );
    ctx.io.out(ctx.json ? json(r) : showResell(r, ctx.style));
  },
};

/** Where kubectl reads its config: the first file of KUBECONFIG, else ~/.kube/config. */
export function kubeconfigPath(env: NodeJS.ProcessEnv): string {
  const first = (env['KUBECONFIG'] ?? '').split(delimiter).find((p) => p !== '');
  return first ?? join(homedir(), '.kube', 'config');
}

const kubeconfig: Leaf = {
  kind: 'leaf',
  name: 'kubeconfig',
  args: [LEASE],
  summary: "the lease's kubeconfig: written to a file, or merged into your kubeconfig",
  example: 'gpux kubeconfig lse_1a2b3c --merge && kubectl --context gpux-lse_1a2b3c get pods',
  noJson: true,
  options: [
    {
      flags: '--out <file>',
      description: 'where to write it (default ./<lease>.kubeconfig; - prints it)',
    },
    {
      flags: '--merge',
      description: 'merge its context into $KUBECONFIG or ~/.kube/config, keeping the others',
    },
  ],
  async run(ctx, a) {
    const api = ctx.api();
    const id = a.arg(0);
    const text = await api.read(
      api.client.GET('/v1/leases/{id}/kubeconfig', { ...byId(id), parseAs: 'text' }),
    );
    const out = a.opt('out');
    if (a.opt<boolean>('merge') === true) {
      if (out !== undefined) throw new UsageError('--merge and --out: one or the other');
      const path = kubeconfigPath(ctx.io.env);
      const name = `gpux-${id}`;
      writePrivate(
        path,
        merge(existsSync(path) ? readFileSync(path, 'utf8') : '', renamed(text, name)),
      );
      ctx.io.out(`merged context ${name} into ${path}\n  kubectl --context ${name} get pods\n`);
      return;
    }
    if (out === '-') return ctx.io.out(text);
    const path = resolve(out ?? `${id}.kubeconfig`);
    writePrivate(path, text);
    ctx.io.out(`wrote ${path}\n  KUBECONFIG=${path} kubectl get pods\n`);
  },
};

/** The user's first public key in ~/.ssh (by name). */
export function defaultPublicKey(home: string): string {
  const dir = join(home, '.ssh');
  const keys = existsSync(dir)
    ? readdirSync(dir)
        .filter((f) => f.endsWith('.pub'))
        .sort()
    : [];
  const first = keys[0];
  if (first === undefined) {
    throw new UsageError(`no public key in ${dir}: give its path, or make one with ssh-keygen`);
  }
  return join(dir, first);
}

const keys: Node = group(
  'keys',
  'your SSH public keys, installed on the leases you buy',
  'gpux keys add',
  [
    {
      kind: 'leaf',
      name: 'add',
      args: [['[path]', 'an OpenSSH public key file (default: the first ~/.ssh/*.pub)']],
      summary: 'register a public key: it is installed on every lease you buy',
      example: 'gpux keys add ~/.ssh/id_ed25519.pub --name laptop',
      options: [
        {
          flags: '--name <name>',
          description: "a name for it (default: the key's comment or file)",
        },
      ],
      async run(ctx, a) {
        const path = a.value<string | undefined>(0) ?? defaultPublicKey(homedir());
        let publicKey: string;
        try {
          publicKey = readFileSync(path, 'utf8').trim();
        } catch (e) {
          throw new CliError(`cannot read ${path}: ${(e as Error).message}`, EXIT.usage);
        }
        const comment = publicKey.split(/\s+/)[2];
        const name = a.opt('name') ?? comment ?? basename(path, '.pub');
        const api = ctx.api();
        const k = await api.read(
          api.client.POST('/v1/ssh_keys', { body: { name, public_key: publicKey } }),
        );
        ctx.io.out(ctx.json ? json(k) : showKey(k, ctx.style));
      },
    },
    endpoint({
      name: 'ls',
      summary: 'your registered keys, newest first',
      example: 'gpux keys ls',
      call: (c) => c.GET('/v1/ssh_keys'),
      show: showKeys,
    }),
    endpoint({
      name: 'rm',
      args: [['<key-id>', 'the key (key_…)']],
      summary: 'remove a key: leases bought later do not get it',
      example: 'gpux keys rm key_1a2b3c',
      call: (c, a) => c.DELETE('/v1/ssh_keys/{id}', byId(a.arg(0))),
      show: (d) => `removed ${d.ssh_key_id}\n`,
    }),
  ],
);

export const LEASE_COMMANDS: readonly Node[] = [leases, lease, terminate, resell, kubeconfig, keys];
