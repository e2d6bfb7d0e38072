// `gpux ssh LEASE` and `gpux ssh-config`: the system's OpenSSH client,
// pinned to the host keys the exchange returned for the lease's endpoints
// (`ssh_access[].known_hosts`, docs/api/leases.md "SSH access") with
// StrictHostKeyChecking=yes, so even the first connection is checked and a
// changed host key is refused. `gpux ssh` exits with ssh's own status.

import { spawn } from 'node:child_process';
import { once } from 'node:events';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { constants, homedir, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

import type { Api, Schemas } from './api.js';
import { byId } from './command.js';
import type { Context, Leaf, OptionSpec } from './command.js';
import { ChildExit, CliError, EXIT, UsageError } from './exit.js';

type Lease = Schemas['LeaseDetail'];
type Access = Schemas['SshAccess'];

/** The known_hosts lines that pin one endpoint: the exchange's own (one change to build them otherwise). */
export function knownHostsLines(a: Access): readonly string[] {
  return a.known_hosts;
}

/** The endpoint of `node` (1-based number or host name; default the first) of a live lease. */
export function accessOf(lease: Lease, node: string | undefined): Access {
  if (lease.ssh_access.length === 0) {
    throw new CliError(
      `lease ${lease.lease_id} is ${lease.state}: it has no SSH access ` +
        (lease.state === 'provisioning' || lease.state === 'scheduled'
          ? 'yet (gpux lease to follow it)'
          : 'any more'),
      EXIT.conflict,
    );
  }
  if (node === undefined) return lease.ssh_access[0] as Access;
  const byNumber = /^\d+$/.test(node) ? lease.ssh_access[Number(node) - 1] : undefined;
  const found = byNumber ?? lease.ssh_access.find((a) => a.hostname === node);
  if (found === undefined) {
    const names = lease.ssh_access.map((a, i) => `${i + 1} (${a.hostname})`).join(', ');
    throw new UsageError(`--node ${node}: lease ${lease.lease_id} has nodes ${names}`);
  }
  return found;
}

/** A file only the user can read, written whole (a new file renamed over the old). */
export function writePrivate(path: string, text: string): void {
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  const tmp = `${path}.${process.pid}.tmp`;
  writeFileSync(tmp, text, { mode: 0o600 });
  renameSync(tmp, path);
}

/** ssh_config quoting: a value with blanks in double quotes. */
function quoted(v: string): string {
  return /[\s"]/.test(v) ? `"${v.replace(/"/g, '\\"')}"` : v;
}

const IDENTITY: OptionSpec = {
  flags: '-i, --identity <file>',
  description: 'the private key to log in with (default: ssh picks as usual)',
};

function identityOptions(file: string | undefined): string[] {
  return file === undefined ? [] : ['-i', file, '-o', 'IdentitiesOnly=yes'];
}

const ssh: Leaf = {
  kind: 'leaf',
  name: 'ssh',
  args: [
    ['<lease-id>', 'the lease (lse_…)'],
    ['[command...]', 'a command to run there (after --); none: a shell'],
  ],
  summary: "a shell (or a command) on a lease's node through OpenSSH, the host key pinned",
  example: 'gpux ssh lse_1a2b3c -- nvidia-smi',
  noJson: true,
  options: [
    { flags: '--node <n>', description: 'which node: its number (1, 2, …) or host name' },
    IDENTITY,
  ],
  async run(ctx, a) {
    const api = ctx.api();
    const lease = await api.read(api.client.GET('/v1/leases/{id}', byId(a.arg(0))));
    const access = accessOf(lease, a.opt('node'));
    const dir = mkdtempSync(join(tmpdir(), 'gpux-ssh-'));
    const knownHosts = join(dir, 'known_hosts');
    writePrivate(knownHosts, `${knownHostsLines(access).join('\n')}\n`);
    const command = a.value<string[] | undefined>(1) ?? [];
    const args = [
      '-o',
      'StrictHostKeyChecking=yes',
      '-o',
      `UserKnownHostsFile=${knownHosts}`,
      '-o',
      'GlobalKnownHostsFile=/dev/null',
      ...identityOptions(a.opt('identity')),
      '-p',
      String(access.port),
      '-l',
      access.user,
      access.host,
      ...(command.length > 0 ? ['--', ...command] : []),
    ];
    // Ctrl-C belongs to ssh (and the remote command) while it runs.
    const undo = ctx.io.onInterrupt(() => undefined);
    try {
      const child = spawn('ssh', args, { stdio: 'inherit' });
      const [code, signal] = (await Promise.race([
        once(child, 'exit'),
        once(child, 'error').then(([e]) => {
          throw new CliError(
            `cannot run ssh (OpenSSH's client): ${(e as Error).message}`,
            EXIT.usage,
          );
        }),
      ])) as [number | null, NodeJS.Signals | null];
      throw new ChildExit(code ?? 128 + (signal === null ? 0 : constants.signals[signal]));
    } finally {
      undo();
      rmSync(dir, { recursive: true, force: true });
    }
  },
};

/** Every live lease with its access (GET /v1/leases?status=active, then each lease). */
async function liveLeases(api: Api): Promise<Lease[]> {
  const out: Lease[] = [];
  for (let offset = 0; ; offset += 100) {
    const page = await api.read(
      api.client.GET('/v1/leases', { params: { query: { status: 'active', limit: 100, offset } } }),
    );
    for (const l of page.leases) {
      out.push(await api.read(api.client.GET('/v1/leases/{id}', byId(l.lease_id))));
    }
    if (offset + page.leases.length >= page.total || page.leases.length === 0) return out;
  }
}

/** The Host entries of the leases (`LEASE` and `LEASE-n` for node n), pinned to `knownHosts`. */
export function hostEntries(
  leases: readonly Lease[],
  knownHosts: string,
  identity?: string,
): string {
  const blocks = [
    '# Written by gpux ssh-config: the live leases. Rewritten each run; do not edit.',
  ];
  for (const l of leases) {
    l.ssh_access.forEach((a, i) => {
      const names = i === 0 ? `${l.lease_id} ${l.lease_id}-1` : `${l.lease_id}-${i + 1}`;
      blocks.push(
        [
          `Host ${names}`,
          `  # ${l.instance_type} in ${l.zone}, node ${a.hostname}, until ${l.end_time}`,
          `  HostName ${a.host}`,
          `  Port ${a.port}`,
          `  User ${a.user}`,
          `  UserKnownHostsFile ${quoted(knownHosts)}`,
          '  GlobalKnownHostsFile /dev/null',
          '  StrictHostKeyChecking yes',
          ...(identity === undefined
            ? []
            : [`  IdentityFile ${quoted(identity)}`, '  IdentitiesOnly yes']),
        ].join('\n'),
      );
    });
  }
  return `${blocks.join('\n\n')}\n`;
}

/** Adds `line` at the top of the ssh config at `path` unless it is there. True when added. */
export function addInclude(path: string, line: string): boolean {
  const text = existsSync(path) ? readFileSync(path, 'utf8') : '';
  if (text.split('\n').some((l) => l.trim() === line)) return false;
  // At the top: an Include after a Host line would belong to that Host.
  writePrivate(path, `${line}\n${text === '' ? '' : `\n${text}`}`);
  return true;
}

const sshConfig: Leaf = {
  kind: 'leaf',
  name: 'ssh-config',
  summary: 'write pinned Host entries for your live leases, for plain ssh, scp, rsync, editors',
  example: 'gpux ssh-config --add-include && ssh lse_1a2b3c',
  options: [
    {
      flags: '--add-include',
      description: 'also add the Include line to ~/.ssh/config (once; at its top)',
    },
    IDENTITY,
  ],
  async run(ctx: Context, a) {
    const api = ctx.api();
    const leases = await liveLeases(api);
    const dir = join(homedir(), '.ssh', 'gpux');
    const config = join(dir, 'config');
    const knownHosts = join(dir, 'known_hosts');
    const lines = leases.flatMap((l) => l.ssh_access.flatMap(knownHostsLines));
    writePrivate(knownHosts, lines.length === 0 ? '' : `${lines.join('\n')}\n`);
    writePrivate(config, hostEntries(leases, knownHosts, a.opt('identity')));
    const include = `Include ${quoted(config)}`;
    const userConfig = join(homedir(), '.ssh', 'config');
    const added = a.opt<boolean>('addInclude') === true && addInclude(userConfig, include);
    if (ctx.json) {
      ctx.io.out(`${JSON.stringify({ config, known_hosts: knownHosts, leases }, null, 2)}\n`);
      return;
    }
    const hosts = leases.flatMap((l) =>
      l.ssh_access.map((_, i) => (i === 0 ? l.lease_id : `${l.lease_id}-${i + 1}`)),
    );
    ctx.io.out(
      `wrote ${config} (${hosts.length === 0 ? 'no live leases' : `hosts: ${hosts.join(', ')}`})\n` +
        `and ${knownHosts}\n` +
        (added
          ? `added "${include}" to ${userConfig}\n`
          : a.opt<boolean>('addInclude') === true
            ? `${userConfig} already has "${include}"\n`
            : `ssh reads it once ${userConfig} has, at its top:\n  ${include}\n(gpux ssh-config --add-include adds it)\n`),
    );
  },
};

export const SSH_COMMANDS: readonly Leaf[] = [ssh, sshConfig];
