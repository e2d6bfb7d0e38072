// `gpux start` (what `npm start` runs, D34): the whole market in one process
// on embedded defaults: the exchange (PGlite unless DATABASE_URL, the
// in-process bus unless NATS_URL) and a simulated agent on the demo cluster,
// so a newcomer can register an SSH key, buy a node, ssh into it and
// terminate it within minutes of cloning. The banner gives those steps as
// commands to paste.

import { join } from 'node:path';

import { AgentFatalError, compileAgentConfig, startAgent } from '@gpux/agent';
import type { AgentHandle } from '@gpux/agent';
import {
  banner,
  drainOnSignals,
  exchangeBanner,
  exitOnFatal,
  ownedOrExit,
  readConfig,
  standbyBanner,
  startExchange,
  startOrExit,
} from '@gpux/exchange';
import type { Exchange } from '@gpux/exchange';
import { pino } from 'pino';

/** Where the demo agent's SSH gateway listens unless GPUX_SSH_LISTEN says otherwise. */
const DEMO_SSH_LISTEN = '127.0.0.1:2222';
/** The demo agent's ask, dollars per GPU-hour (the demo buy in the banner pays it). */
const DEMO_ASK = '2.50';

export async function runStart(env: NodeJS.ProcessEnv = process.env): Promise<void> {
  const config = readConfig(env);
  const logger = pino({ level: config.logLevel });
  const started: { ex?: Exchange } = {};
  const ex = await startOrExit(config, logger, () =>
    startExchange(config, {
      logger,
      onStandby: standbyBanner,
      onFatal: () => exitOnFatal(logger, started.ex),
    }),
  );
  started.ex = ex;
  let agent: AgentHandle | undefined;
  drainOnSignals(logger, config.drainTimeoutMs, async (ms) => {
    // The agent first: it stops taking events, then the exchange drains.
    await agent?.stop();
    return ex.drain(ms);
  });
  // Another process may own this database's market: the demo agent starts
  // once this one does (docs/ownership.md).
  const owned = await ownedOrExit(ex, logger);
  if (owned === undefined) return;
  const demo = owned.demo;
  if (demo !== undefined) {
    try {
      const agentConfig = compileAgentConfig(
        {
          exchangeGrpcUrl: `127.0.0.1:${ex.grpcPort}`,
          token: demo.providerToken,
          clusterId: demo.clusterId,
          natsUrl: config.natsUrl,
          natsCredsFile: env['NATS_CREDS'],
          provisioner: 'simulated',
          sshListen: env['GPUX_SSH_LISTEN'] ?? DEMO_SSH_LISTEN,
          sshAdvertiseHost: env['GPUX_SSH_ADVERTISE_HOST'],
          askPrice: env['GPUX_ASK_PRICE'] ?? DEMO_ASK,
          stateDir: join(config.dataDir, 'agent'),
          logLevel: config.logLevel,
        },
        { inProcessBus: config.natsUrl === undefined },
      );
      agent = await startAgent(agentConfig, {
        logger: logger.child({ service: 'gpux-agent' }),
        ...(ex.bus === undefined ? {} : { bus: ex.bus }),
      });
    } catch (err) {
      const why =
        err instanceof AgentFatalError || err instanceof Error ? err.message : String(err);
      logger.fatal({ err }, 'the demo agent could not start');
      process.stderr.write(`gpux start: the demo agent could not start: ${why}\n`);
      await ex.drain(0);
      process.exit(1);
    }
  }
  exchangeBanner(config, ex, owned);
  if (demo === undefined || agent === undefined) {
    banner('no demo data (a production database without GPUX_DEMO=1): no demo agent runs');
    return;
  }
  await agent.ready;
  const ssh = agent.status().ssh;
  const [sshHost, sshPort] = splitHostPort(ssh.address);
  const token = demo.buyerToken;
  const url = ex.url;
  const auth = `-H 'Authorization: Bearer ${token}'`;
  const json = `-H 'Content-Type: application/json'`;
  banner(
    `demo agent: simulated cluster ${demo.clusterId}, SSH gateway on ${ssh.address} (host key ${ssh.hostKeyFingerprint ?? '?'})`,
  );
  banner('');
  banner('Try it (each line is a command to paste):');
  banner(
    `  # 1. register your SSH public key before you buy: a lease lets in the keys you had then (docs/api/accounts.md)`,
  );
  banner(
    `  curl ${auth} ${json} -d "{\\"name\\":\\"laptop\\",\\"public_key\\":\\"$(cat ~/.ssh/id_ed25519.pub)\\"}" ${url}/v1/ssh_keys`,
  );
  banner(`  # 2. buy one node (8 GPUs) for 2 hours; note the lease_id`);
  banner(
    `  curl ${auth} ${json} -d '{"side":"buy","gpu_type":"h100","zone":"us-west-1","gpu_count":8,"duration_hours":2}' ${url}/v1/orders`,
  );
  banner(`  # 3. read the lease: status active, its ssh_endpoints and host key`);
  banner(`  curl ${auth} ${url}/v1/leases/LEASE_ID`);
  banner(`  # 4. log in (the endpoint is <user>@<host>:<port>)`);
  banner(`  ssh -p ${sshPort} LEASE_USER-1@${sshHost}`);
  banner(
    `  # 5. terminate: the session ends and the unused hours are refunded at once (docs/api/leases.md)`,
  );
  banner(`  curl -X DELETE ${auth} ${url}/v1/leases/LEASE_ID`);
}

/** `127.0.0.1:2222` → ['127.0.0.1', '2222']; `[::1]:2222` → ['::1', '2222']. */
function splitHostPort(address: string): [string, string] {
  const i = address.lastIndexOf(':');
  return [address.slice(0, i).replace(/^\[|\]$/g, ''), address.slice(i + 1)];
}
