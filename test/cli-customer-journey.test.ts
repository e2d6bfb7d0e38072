// A customer's journey with `gpux` alone (issue 24): the built command as a
// child process against a real exchange on PostgreSQL and the built agent
// (simulated provisioner, its SSH gateway): login, keys add (the first key
// in ~/.ssh), quote, buy --wait --yes, `gpux ssh LEASE -- echo ok` through
// the real OpenSSH client pinned to the lease's host key (and a changed
// host key refused), ssh-config then plain `ssh -F` and `scp`, kubeconfig
// written and merged into a kubeconfig with another context, leases with
// the time left, resell's preview, terminate with the refund shown.

import { execFileSync } from 'node:child_process';
import { createServer } from 'node:http';
import type { Server } from 'node:http';
import { mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';

import { envOf, homeOf, jsonOf } from './support/customer-cli.js';
import { runGpux } from './support/gpux-cli.js';
import type { GpuxRun } from './support/gpux-cli.js';
import { ProviderStack } from './support/provider-stack.js';
import { makeSshKey } from './support/ssh-client.js';
import type { SshKey } from './support/ssh-client.js';

const ZONE = 'us-east-1';
let stack: ProviderStack;
let key: SshKey;
let home = '';
let leaseId = '';

beforeAll(async () => {
  stack = await ProviderStack.start({
    nodes: ['gpu-a', 'gpu-b'],
    askPrice: '2.50',
    label: 'gpux_cli_journey',
  });
  home = homeOf(stack, stack.buyer).home;
  mkdirSync(join(home, '.ssh'), { recursive: true, mode: 0o700 });
  key = makeSshKey(join(home, '.ssh'), 'id_ed25519');
});

afterAll(async () => {
  await stack?.close();
});

/** gpux as the buyer after `gpux login` (no token in the environment). */
function gpux(...args: string[]): Promise<GpuxRun> {
  return runGpux(args, envOf(stack, stack.buyer, true));
}

/** OpenSSH's `cmd` with the written config only (never the machine's). */
function run(cmd: string, args: string[]): { code: number; stdout: string; stderr: string } {
  try {
    return { code: 0, stdout: execFileSync(cmd, args, { encoding: 'utf8' }), stderr: '' };
  } catch (e) {
    const err = e as { status: number; stdout: string; stderr: string };
    return { code: err.status, stdout: err.stdout, stderr: err.stderr };
  }
}

describe('a customer from login to terminate with gpux', () => {
  it('login, keys add (the first ~/.ssh/*.pub), keys ls', async () => {
    const login = await runGpux(
      ['login', '--url', stack.url, '--token', '-'],
      envOf(stack, stack.buyer, true),
      `${stack.buyer.token}\n`,
    );
    expect(login.code, login.stderr).toBe(0);
    const add = await gpux('keys', 'add');
    expect(add.code, add.stderr).toBe(0);
    expect(add.stdout).toMatch(/^name +id_ed25519$/m);
    expect(add.stdout).toMatch(/^fingerprint +SHA256:\S+$/m);
    const api = await stack.ok('GET', '/v1/ssh_keys', stack.buyer.token);
    expect(jsonOf(await gpux('keys', 'ls', '--json'))).toEqual(api);
    expect((await gpux('keys', 'ls')).stdout).toMatch(
      /^key_\S+ +id_ed25519 +ssh-ed25519 +SHA256:/m,
    );
  });

  it('quote, then buy --wait --yes: it ends when SSH answers and says how to connect', async () => {
    await stack.waitForAsks(16);
    const quote = await gpux('quote', '8xh100', '--zone', ZONE, '--hours', '2');
    expect(quote.stdout).toMatch(/^fills now +yes$/m);
    const buy = await gpux('buy', '8xh100', '--zone', ZONE, '--hours', '2', '--wait', '--yes');
    expect(buy.code, buy.stderr).toBe(0);
    leaseId = /^ {2}gpux ssh (lse_\S+)$/m.exec(buy.stdout)?.[1] ?? '';
    expect(leaseId, buy.stdout).not.toBe('');
    expect(buy.stderr).toContain(`lease ${leaseId}: active; SSH answers at`);
  });

  it('gpux ssh LEASE -- command: through OpenSSH, pinned; the exit status is the remote one', async () => {
    const ok = await gpux('ssh', leaseId, '-i', key.file, '--', 'echo', 'ok');
    expect(ok).toEqual({ code: 0, stdout: 'ok\n', stderr: '' });
    const seven = await gpux('ssh', leaseId, '-i', key.file, '--', 'sh', '-c', "'exit 7'");
    expect(seven.code).toBe(7);
    const node = await gpux('ssh', leaseId, '--node', '3', '-i', key.file, '--', 'true');
    expect(node.code).toBe(2);
    expect(node.stderr).toMatch(/--node 3: lease \S+ has nodes 1 \(gpu-\w\)/);
  });

  it('a host key other than the one the exchange returned is refused', async () => {
    // The exchange's answer passes through a proxy that swaps the lease's host key.
    const other = makeSshKey(stack.dir, 'not-the-host').publicKey.split(' ').slice(0, 2).join(' ');
    const proxy: Server = createServer((req, res) => {
      void (async () => {
        const upstream = await fetch(`${stack.url}${req.url ?? ''}`, {
          method: req.method ?? 'GET',
          headers: { authorization: req.headers.authorization ?? '' },
        });
        let text = await upstream.text();
        if (req.url?.startsWith('/v1/leases/') === true) {
          const lease = JSON.parse(text) as { ssh_access: { known_hosts: string[] }[] };
          for (const a of lease.ssh_access) {
            a.known_hosts = a.known_hosts.map((l) => `${l.split(' ')[0] ?? ''} ${other}`);
          }
          text = JSON.stringify(lease);
        }
        res.writeHead(upstream.status, { 'content-type': 'application/json' }).end(text);
      })();
    });
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
    const address = proxy.address();
    const port = typeof address === 'object' && address !== null ? address.port : 0;
    try {
      const r = await runGpux(['ssh', leaseId, '-i', key.file, '--', 'echo', 'ok'], {
        ...envOf(stack, stack.buyer),
        GPUX_URL: `http://127.0.0.1:${port}`,
      });
      expect(r.code).toBe(255);
      expect(r.stdout).toBe('');
      expect(r.stderr).toMatch(
        /REMOTE HOST IDENTIFICATION HAS CHANGED|Host key verification failed/,
      );
    } finally {
      proxy.close();
    }
  });

  it('ssh-config: pinned Host entries; plain ssh -F and scp use them; the Include line added once', async () => {
    const r = await gpux('ssh-config', '-i', key.file, '--add-include');
    expect(r.code, r.stderr).toBe(0);
    const config = join(home, '.ssh', 'gpux', 'config');
    expect(r.stdout).toContain(`wrote ${config} (hosts: ${leaseId})`);
    expect(statSync(config).mode & 0o777).toBe(0o600);
    const text = readFileSync(config, 'utf8');
    expect(text).toContain(`Host ${leaseId} ${leaseId}-1\n`);
    expect(text).toContain('  StrictHostKeyChecking yes\n');

    const ssh = run('ssh', ['-F', config, '-o', 'BatchMode=yes', leaseId, 'echo', 'ok']);
    expect(ssh).toEqual({ code: 0, stdout: 'ok\n', stderr: '' });
    const local = join(stack.dir, 'upload.txt');
    writeFileSync(local, 'carried by scp\n');
    const scp = run('scp', ['-F', config, '-o', 'BatchMode=yes', local, `${leaseId}:upload.txt`]);
    expect(scp.code, scp.stderr).toBe(0);
    expect(
      run('ssh', ['-F', config, '-o', 'BatchMode=yes', leaseId, 'cat', 'upload.txt']).stdout,
    ).toBe('carried by scp\n');

    const again = await gpux('ssh-config', '-i', key.file, '--add-include');
    expect(again.stdout).toContain('already has');
    const userConfig = readFileSync(join(home, '.ssh', 'config'), 'utf8');
    expect(userConfig.match(/^Include /gm)).toHaveLength(1);
  });

  it('kubeconfig: written to a file, or merged beside the contexts already there', async () => {
    const file = join(stack.dir, 'lease.kubeconfig');
    const w = await gpux('kubeconfig', leaseId, '--out', file);
    expect(w.code, w.stderr).toBe(0);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(parse(readFileSync(file, 'utf8'))).toMatchObject({ kind: 'Config' });

    const kube = join(home, 'kube', 'config');
    mkdirSync(join(home, 'kube'));
    const mine = {
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: 'other', cluster: { server: 'https://other.example:6443' } }],
      users: [{ name: 'other', user: { token: 'x' } }],
      contexts: [{ name: 'other', context: { cluster: 'other', user: 'other' } }],
      'current-context': 'other',
    };
    writeFileSync(kube, JSON.stringify(mine));
    const env = { ...envOf(stack, stack.buyer, true), KUBECONFIG: kube };
    for (let i = 0; i < 2; i++) {
      const m = await runGpux(['kubeconfig', leaseId, '--merge'], env);
      expect(m.code, m.stderr).toBe(0);
      expect(m.stdout).toContain(`merged context gpux-${leaseId} into ${kube}`);
    }
    const merged = parse(readFileSync(kube, 'utf8')) as typeof mine;
    expect(merged['current-context']).toBe('other');
    expect(merged.contexts.map((c) => c.name)).toEqual(['other', `gpux-${leaseId}`]);
    expect(merged.clusters.map((c) => c.name)).toEqual(['other', `gpux-${leaseId}`]);
    expect(merged.users[0]).toEqual(mine.users[0]);
  });

  it('leases and lease: the time left; --json is the API', async () => {
    const list = await gpux('leases');
    expect(list.stdout).toMatch(
      new RegExp(
        `^${leaseId} +8xh100 +us-east-1 +active +\\$2\\.50/GPU-h +\\S+ \\S+ \\S+ +1 h [45]\\d min$`,
        'm',
      ),
    );
    const api = await stack.ok('GET', `/v1/leases/${leaseId}`, stack.buyer.token);
    expect(jsonOf(await gpux('lease', leaseId, '--json'))).toEqual(api);
    expect((await gpux('lease', leaseId)).stdout).toMatch(/^state +active$/m);
  });

  it('resell shows what the whole window would bring and what nothing selling leaves; the offer rests', async () => {
    const r = await gpux('resell', leaseId, '--price', '3.50', '--yes');
    expect(r.code, r.stderr).toBe(0);
    // About 2 h left × $3.50 × 8 GPUs ≈ $56 (within the collar: the last trade ± 50%), less the 10% fee.
    const [, net = '', gross = ''] =
      /^if all sells +you get \$(\d+\.\d\d) \(\$(5\d\.\d\d) at \$3\.50\/GPU-h, less the 10% fee\)$/m.exec(
        r.stderr,
      ) ?? [];
    expect(Number(net)).toBeCloseTo(Number(gross) * 0.9, 1);
    expect(r.stderr).toMatch(/^if none sells +you get nothing back/m);
    expect(r.stdout).toMatch(/^status +pending: offered in the book$/m);
    const order = /^cancel with +gpux cancel (ord_\S+)$/m.exec(r.stdout)?.[1] ?? '';
    expect((await gpux('cancel', order)).code).toBe(0);
  });

  it('terminate asks first (no terminal and no --yes: exit 2), then shows the refund', async () => {
    const refused = await gpux('terminate', leaseId);
    expect(refused.code).toBe(2);
    const t = await gpux('terminate', leaseId, '--yes');
    expect(t.code, t.stderr).toBe(0);
    expect(t.stderr).toMatch(/^refund +about \$\d+\.\d\d/m);
    const refund = /^refund +\$(\d+\.\d\d)$/m.exec(t.stdout)?.[1];
    const rows = await stack.transactions();
    const credited = rows.find(
      (x) => x.transaction_kind === 'lease_refund' && x.lease_id === leaseId,
    );
    expect(credited?.amount.toFixed(2)).toBe(refund);
    const gone = await gpux('terminate', leaseId, '--yes');
    expect(gone.code).toBe(5);
  });
});
