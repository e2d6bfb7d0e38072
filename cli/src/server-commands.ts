// The commands that run the market's programs: each parses its own command
// line (its settings as flags, its own --help), so `gpux` hands them their
// arguments untouched. They are loaded only when run or listed: a command
// of the API (cli/src/client/) starts without loading the exchange or the
// agent.

import type { FlagInfo, ProgramCommand } from './client/program.js';

/** The settings of a program as `gpux commands --json` lists them. */
function settingFlags(
  settings: readonly { flag: string; name: string; description: string }[],
): FlagInfo[] {
  return settings.map((s) => ({
    flags: `${s.flag} <value>`,
    env: s.name,
    description: s.description.replace(/`/g, ''),
  }));
}

export const SERVER_COMMANDS: readonly (ProgramCommand & {
  run(args: readonly string[]): Promise<void>;
})[] = [
  {
    name: 'start',
    summary:
      'the whole market in one process on embedded defaults: the exchange and a simulated agent on the demo cluster (npm start)',
    async run(args) {
      const { runStart } = await import('./start.js');
      await runStart(args);
    },
    async flags() {
      const { EXCHANGE_SETTINGS } = await import('@gpux/exchange');
      const { DEMO_AGENT_SETTINGS } = await import('./start.js');
      return settingFlags([...EXCHANGE_SETTINGS, ...DEMO_AGENT_SETTINGS]);
    },
  },
  {
    name: 'exchange',
    summary: 'the exchange',
    async run(args) {
      const { runExchange } = await import('@gpux/exchange');
      await runExchange(args);
    },
    async flags() {
      return settingFlags((await import('@gpux/exchange')).EXCHANGE_SETTINGS);
    },
  },
  {
    name: 'agent',
    summary: "a provider's agent",
    async run(args) {
      const { runAgent } = await import('@gpux/agent');
      await runAgent(args);
    },
    async flags() {
      return settingFlags((await import('@gpux/agent')).AGENT_SETTINGS);
    },
  },
  {
    name: 'nats-config',
    summary: 'the NATS users and permissions of the exchange and agents, seeds in --out DIR',
    async run(args) {
      const { natsConfig } = await import('./nats-config.js');
      const r = natsConfig(args);
      process.stdout.write(r.stdout);
      process.stderr.write(r.stderr);
      process.exitCode = r.exitCode;
    },
    flags: () =>
      Promise.resolve([
        { flags: '--out <dir>', description: 'the directory of the NATS seeds (required)' },
        { flags: '--cluster <cls_…>', description: "add a cluster's agent user (repeatable)" },
      ]),
  },
  {
    name: 'rekey',
    summary:
      'seal every stored kubeconfig and webhook secret again under the newest key of GPUX_SECRET_KEY (rotating the key)',
    async run(args) {
      const { runRekey } = await import('@gpux/exchange');
      process.exitCode = await runRekey(args);
    },
    async flags() {
      return settingFlags((await import('@gpux/exchange')).EXCHANGE_SETTINGS);
    },
  },
];
