// The exchange on a host (deploy/exchange, issue 13): the systemd unit passes
// `systemd-analyze verify` (package systemd) and runs node with
// EXCHANGE_NODE_FLAGS, and exchange.env.example names every setting of the
// README's table, each with its comment, with values the exchange accepts.

import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { EXCHANGE_NODE_FLAGS, loadConfig } from '@gpux/exchange';
import { afterAll, describe, expect, it } from 'vitest';

import { SYSTEMD_ANALYZE, requireProgram } from './support/prerequisites.js';

const root = fileURLToPath(new URL('..', import.meta.url));
const unitText = readFileSync(join(root, 'deploy/exchange/gpux-exchange.service'), 'utf8');
const envText = readFileSync(join(root, 'deploy/exchange/exchange.env.example'), 'utf8');

/** `Key=value` lines of a unit's section, in order (a key may repeat). */
function section(text: string, name: string): [string, string][] {
  const out: [string, string][] = [];
  let current = '';
  for (const line of text.split('\n')) {
    const header = /^\[(\w+)\]$/.exec(line);
    if (header !== null) current = header[1] ?? '';
    else if (current === name && /^\w+=/.test(line)) {
      const eq = line.indexOf('=');
      out.push([line.slice(0, eq), line.slice(eq + 1)]);
    }
  }
  return out;
}

/** The variables of the README's "Settings of the exchange" table. */
function readmeExchangeSettings(): string[] {
  const readme = readFileSync(join(root, 'README.md'), 'utf8');
  const start = readme.indexOf('## Settings of the exchange');
  const end = readme.indexOf('\n## ', start + 1);
  const rows = readme
    .slice(start, end)
    .split('\n')
    .filter((l) => l.startsWith('| `'));
  return rows.flatMap((row) =>
    [...(row.split('|')[1] ?? '').matchAll(/`([A-Z_]+)`/g)].map((m) => m[1] ?? ''),
  );
}

const KEY = /^(# )?([A-Z][A-Z0-9_]*)=(.*)$/;

describe('deploy/exchange/gpux-exchange.service', () => {
  const dir = mkdtempSync(join(tmpdir(), 'gpux-unit-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('runs the built exchange with the node flags of node-flags.ts, its settings from the environment file', () => {
    const service = new Map(section(unitText, 'Service'));
    expect(service.get('ExecStart')).toBe(
      ['/usr/bin/node', ...EXCHANGE_NODE_FLAGS, '/opt/gpux/exchange/dist/main.js'].join(' '),
    );
    expect(service.get('EnvironmentFile')).toBe('/etc/gpux/exchange.env');
    expect(service.get('User')).toBe('gpux-exchange');
    expect(service.get('StateDirectory')).toBe('gpux-exchange');
    // Exit 2 is a configuration problem (D34): restarting does not help.
    expect(service.get('RestartPreventExitStatus')).toBe('2');
  });

  it('counts as started once the exchange answers GET /healthz (alive, a standby too), within a bound', () => {
    const service = new Map(section(unitText, 'Service'));
    expect(service.get('ExecStartPost')).toBe(
      '/usr/bin/node /opt/gpux/deploy/exchange/wait-healthy.mjs',
    );
    expect(Number(service.get('TimeoutStartSec'))).toBeGreaterThan(0);
  });

  it("wait-healthy.mjs waits for the exchange's /healthz on HOST:PORT, then exits 0", async () => {
    let healthy = false;
    const asked: string[] = [];
    const server = createServer((req, res) => {
      asked.push(req.url ?? '');
      res.writeHead(healthy ? 200 : 503).end();
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const { port } = server.address() as AddressInfo;
    const child = spawn(process.execPath, [join(root, 'deploy/exchange/wait-healthy.mjs')], {
      env: { ...process.env, HOST: '0.0.0.0', PORT: String(port) },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
    // Still waiting while the answer is not 200.
    while (asked.length < 2) await new Promise((r) => setTimeout(r, 50));
    expect(child.exitCode).toBeNull();
    healthy = true;
    expect(await exited).toBe(0);
    server.close();
    expect(new Set(asked)).toEqual(new Set(['/healthz']));
  });

  it('is hardened: no new privileges, a read-only system, no capabilities', () => {
    const service = new Map(section(unitText, 'Service'));
    expect(service.get('NoNewPrivileges')).toBe('yes');
    expect(service.get('ProtectSystem')).toBe('strict');
    expect(service.get('ProtectHome')).toBe('yes');
    expect(service.get('PrivateTmp')).toBe('yes');
    expect(service.get('CapabilityBoundingSet')).toBe('');
    // V8 writes executable memory: this one would stop node.
    expect(service.has('MemoryDenyWriteExecute')).toBe(false);
  });

  it('passes systemd-analyze verify without a warning', (ctx) => {
    requireProgram(ctx, SYSTEMD_ANALYZE);
    // The unit as shipped, with this machine's node if it is elsewhere.
    const unit = join(dir, 'gpux-exchange.service');
    writeFileSync(
      unit,
      process.execPath === '/usr/bin/node'
        ? unitText
        : unitText.replace(/^(ExecStart(?:Post)?)=\/usr\/bin\/node/gm, `$1=${process.execPath}`),
    );
    const run = spawnSync('systemd-analyze', ['verify', unit], { encoding: 'utf8' });
    expect(run.stderr).toBe('');
    expect(run.status).toBe(0);
  });
});

describe('deploy/exchange/exchange.env.example', () => {
  const lines = envText.split('\n');
  const keys = lines.flatMap((l, i) => {
    const m = KEY.exec(l);
    return m === null
      ? []
      : [{ line: i, set: m[1] === undefined, name: m[2] ?? '', value: m[3] ?? '' }];
  });

  it("names every setting of the README's table, once", () => {
    const names = keys.map((k) => k.name);
    expect(new Set(names).size).toBe(names.length);
    expect([...names].sort()).toEqual(readmeExchangeSettings().sort());
  });

  it('explains each setting in a comment above it', () => {
    for (const k of keys) {
      let i = k.line - 1;
      while (i >= 0 && KEY.test(lines[i] ?? '')) i--;
      expect(lines[i] ?? '', `${k.name} has no comment`).toMatch(/^# \S/);
    }
  });

  it('holds values the exchange accepts, commented ones included', () => {
    const dir = mkdtempSync(join(tmpdir(), 'gpux-env-'));
    try {
      const env: Record<string, string> = {};
      for (const k of keys) {
        // Files named by the example exist on the host; here, a stand-in
        // (NATS_CREDS is read at start: an nkey seed's form).
        if (k.value.startsWith('/etc/')) {
          const file = join(dir, k.name);
          writeFileSync(file, k.name === 'NATS_CREDS' ? `SU${'A'.repeat(56)}\n` : '');
          env[k.name] = file;
        } else env[k.name] = k.value;
      }
      expect(() => loadConfig(env)).not.toThrow();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
