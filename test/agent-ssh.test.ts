// A buyer's SSH access through the agent end to end (D26, D32): the agent
// process provisions a lease from its event, reports `<ssh_user>@host:port`
// and its gateway's host key; the real OpenSSH client, pinning that key,
// logs in with the buyer's key and lands in the node's workspace; the
// lease's revoke event ends the open session at once and refuses new logins.

import { mkdtempSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { ExchangeDouble } from './agent-exchange-double.js';
import { startAgentProcess } from './support/agent-process.js';
import type { AgentProcess } from './support/agent-process.js';
import {
  finished,
  makeSshKey,
  parseEndpoint,
  runSsh,
  spawnSsh,
  writeKnownHosts,
} from './support/ssh-client.js';
import type { SshKey, SshTarget } from './support/ssh-client.js';
import { untilWith } from './support/until.js';

const NATS_URL = process.env['GPUX_TEST_NATS_URL'] ?? 'nats://127.0.0.1:4222';
const scratch = realpathSync(mkdtempSync(join(tmpdir(), 'gpux-agent-ssh-')));
const stateDir = join(scratch, 'state');
const knownHosts = join(scratch, 'known_hosts');
let key: SshKey;
let stranger: SshKey;

let double: ExchangeDouble;
let agent: AgentProcess | undefined;
const output = (): string => agent?.output() ?? '';

const until = untilWith({ output });

beforeAll(async () => {
  key = makeSshKey(scratch, 'buyer');
  stranger = makeSshKey(scratch, 'stranger');
  double = new ExchangeDouble({ natsUrl: NATS_URL, ackWaitMs: 1_500 });
  await double.start();
});

afterAll(async () => {
  await agent?.stop('SIGKILL');
  await double?.close();
  rmSync(scratch, { recursive: true, force: true });
});

describe("a lease's SSH access through the agent", () => {
  it('logs the buyer into the node workspace, pinned to the reported host key; the revoke ends it', async () => {
    const clusterId = await double.addCluster(['ssh-1']);
    agent = await startAgentProcess({
      ...double.agentSettings(clusterId, stateDir),
      HOME: scratch,
      PROVISIONER: 'simulated',
    });
    await until('attach', () => double.of('attach', clusterId).length > 0);

    const lease = double.addLease(clusterId, ['ssh-1'], [key.publicKey]);
    await double.publish(lease);
    await until('ReportProvisioned', () => double.of('reportProvisioned', clusterId).length === 1);
    const report = double.of('reportProvisioned', clusterId)[0] as {
      sshEndpoints: { endpoint: string }[];
      sshHostKeys: string[];
    };
    const endpoint = parseEndpoint(report.sshEndpoints[0]?.endpoint ?? '');
    expect(endpoint.user).toBe(lease.nodes[0]?.ssh_user);
    writeKnownHosts(knownHosts, endpoint, [report.sshHostKeys[0] ?? '']);
    const as = (k: SshKey): SshTarget => ({ endpoint, key: k, knownHosts });

    const login = await runSsh(
      as(key),
      'pwd; echo "$GPUX_LEASE_ID"; echo "token:${GPUX_TOKEN:-none}"',
    );
    expect(login, output()).toMatchObject({ code: 0 });
    expect(login.stdout.split('\n')).toEqual([
      join(stateDir, 'workspaces', lease.lease_id, endpoint.user),
      lease.lease_id,
      'token:none',
      '',
    ]);
    // D32: only the buyer's key.
    expect((await runSsh(as(stranger), 'true')).code).toBe(255);

    const session = spawnSsh(as(key), 'echo started; sleep 60');
    const ended = finished(session);
    let started = '';
    session.stdout?.on('data', (b: Buffer) => (started += b.toString()));
    await until('the session running', () => started.includes('started'));

    await double.publish(double.endLease(clusterId, lease.lease_id));
    const closed = await ended;
    expect(closed.code).toBe(255);
    expect(closed.stderr).toContain(`gpux: lease ${lease.lease_id} terminated`);
    await until('ReportRevoked', () => double.of('reportRevoked', clusterId).length === 1);
    expect((await runSsh(as(key), 'true')).code).toBe(255);

    expect(await agent.stop('SIGTERM'), output()).toBe(0);
  });
});
