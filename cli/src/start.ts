// `gpux start` (what `npm start` runs, D34): the whole market in one process
// on embedded defaults: the exchange (PGlite unless DATABASE_URL, the
// in-process bus unless NATS_URL) and a simulated agent on the demo cluster,
// so a newcomer can register an SSH key, buy a node, ssh into it and
// terminate it within minutes of cloning. The banner gives those steps as
// commands to paste.

import { join } from 'node:path';

import { AgentFatalError, agentSetting, compileAgentConfig, startAgent } from '@gpux/agent';
import type { AgentHandle } from '@gpux/agent';
import {
  EXCHANGE_SETTINGS,
  banner,
  drainOnSignals,
  exchangeBanner,
  exitOnFatal,
  loadConfig,
  ownedOrExit,
  standbyBanner,
  startExchange,
  startOrExit,
  wantsHelp,
} from '@gpux/exchange';
import type { Config, Exchange } from '@gpux/exchange';
import {
  ConfigError,
  parseFlags,
  readSettings,
  setting,
  settingsHelp,
  withDefaults,
} from '@gpux/shared';
import type { SettingValues } from '@gpux/shared';
import { pino } from 'pino';

/**
 * The demo agent's settings that `gpux start` takes, beside the exchange's
 * (the rest of the demo agent is fixed: the demo cluster, the simulated
 * provisioner, its state under GPUX_DATA_DIR/agent); their rules are the
 * agent's (agent/src/settings.ts), some defaults differ.
 */
export const DEMO_AGENT_SETTINGS = [
  setting('sshListen', {
    name: 'GPUX_SSH_LISTEN',
    parse: agentSetting('sshListen').parse,
    default: '127.0.0.1:2222',
    description:
      "where the demo agent's SSH gateway listens (`host:port`; port 0 picks a free one)",
  }),
  setting('sshAdvertiseHost', {
    name: 'GPUX_SSH_ADVERTISE_HOST',
    parse: agentSetting('sshAdvertiseHost').parse,
    shownDefault: 'the listen host',
    description: 'the host in the SSH endpoints the demo agent reports',
  }),
  setting('askPrice', {
    name: 'GPUX_ASK_PRICE',
    parse: agentSetting('askPrice').parse,
    // The demo buy in the banner pays it.
    default: '2.50',
    description: "the demo agent's ask, dollars per GPU-hour of its free nodes",
  }),
] as const;

/** `gpux start --help`. */
export function startHelp(): string {
  return [
    'gpux start: the whole market in one process on embedded defaults (what',
    '`npm start` runs): the exchange, the in-process event bus unless NATS_URL,',
    'and a simulated agent on the demo cluster; the banner shows how to buy a',
    'node and log in to it.',
    '',
    'Usage: gpux start [--help] [--<flag> <value> | --<flag>=<value> …]',
    '',
    "Settings: the exchange's (gpux exchange --help) and the demo agent's,",
    'environment variables or their flags (a flag wins over its variable).',
    '',
    'The exchange:',
    ...settingsHelp(EXCHANGE_SETTINGS),
    '',
    'The demo agent:',
    ...settingsHelp(DEMO_AGENT_SETTINGS),
    '',
    'SIGTERM drains the agent, then the exchange; exit 0.',
    '',
  ].join('\n');
}

/** The exchange's settings and the demo agent's, every problem at once (exit 2). */
function readStartSettings(
  env: NodeJS.ProcessEnv,
  args: readonly string[],
): { config: Config; demoAgent: SettingValues<typeof DEMO_AGENT_SETTINGS> } {
  const flags = parseFlags([...EXCHANGE_SETTINGS, ...DEMO_AGENT_SETTINGS], args);
  const all = { ...env, ...flags.env };
  const problems = [...flags.problems];
  const demoAgent = withDefaults(
    DEMO_AGENT_SETTINGS,
    readSettings(DEMO_AGENT_SETTINGS, all, [], problems),
  );
  let config: Config | undefined;
  try {
    // Its agent is in this process: the in-process bus is the point.
    config = loadConfig({ GPUX_IN_PROCESS_BUS: '1', ...all });
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    problems.push(...err.problems);
  }
  if (problems.length > 0 || config === undefined) {
    const err = new ConfigError(problems);
    pino().fatal({ problems }, err.message);
    process.exit(2);
  }
  return { config, demoAgent };
}

export async function runStart(
  args: readonly string[] = [],
  env: NodeJS.ProcessEnv = process.env,
): Promise<void> {
  if (wantsHelp(args)) {
    process.stdout.write(startHelp());
    return;
  }
  const { config, demoAgent } = readStartSettings(env, args);
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
          natsCredsFile: config.natsCredsFile,
          provisioner: 'simulated',
          sshListen: demoAgent.sshListen,
          sshAdvertiseHost: demoAgent.sshAdvertiseHost,
          askPrice: demoAgent.askPrice,
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
  const token = demo.buyerToken;
  banner(
    `demo agent: simulated cluster ${demo.clusterId}, SSH gateway on ${ssh.address} (host key ${ssh.hostKeyFingerprint ?? '?'})`,
  );
  banner('');
  banner('Try it, in this checkout (each line is a command to paste; docs/cli.md has them all):');
  banner(`  npx gpux login --url ${ex.url} --token ${token}`);
  banner(
    '  npx gpux keys add      # your first ~/.ssh/*.pub: a lease lets in the keys you had when you bought',
  );
  banner('  npx gpux buy 8xh100 --zone us-west-1 --hours 2 --wait --yes   # prints the lease id');
  banner("  npx gpux ssh LEASE_ID  # a shell on the node, pinned to the lease's host key");
  banner('  npx gpux terminate LEASE_ID --yes   # the unused time refunded at once');
  banner('The same with curl: docs/curl.md');
}
