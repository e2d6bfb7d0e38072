// CPU time of the agents bench's processes, from /proc (http-exchange.ts
// reads it): the exchange (its own process and its agents' service, a child
// process on PostgreSQL), every PostgreSQL process (all backends), and the
// bench itself, its driver and its fleets of agents.

import { cpuMsDelta, cpuMsOf, cpuMsOfAll, cpuMsOfChildren } from './http-exchange.js';

/** CPU used so far (ms) by each process the bench watches. */
export interface Cpu {
  readonly exchange: number;
  /** The exchange's child processes: its agents' gRPC service. */
  readonly agents: number;
  readonly postgres: ReadonlyMap<number, number>;
  readonly driver: number;
  readonly fleets: number;
}

export async function cpuNow(
  exchangePid: number | undefined,
  fleetPids: readonly number[],
): Promise<Cpu> {
  const u = process.cpuUsage();
  let fleets = 0;
  for (const pid of fleetPids) fleets += (await cpuMsOf(pid)) ?? 0;
  return {
    exchange: exchangePid === undefined ? 0 : ((await cpuMsOf(exchangePid)) ?? 0),
    agents: exchangePid === undefined ? 0 : ((await cpuMsOfChildren(exchangePid)) ?? 0),
    postgres: (await cpuMsOfAll('postgres')) ?? new Map(),
    driver: (u.user + u.system) / 1000,
    fleets,
  };
}

export function fmtCpu(a: Cpu, b: Cpu, wallMs?: number): string {
  const s = (ms: number): string =>
    `${(ms / 1000).toFixed(1)} s${wallMs === undefined ? '' : ` (${((ms / wallMs) * 100).toFixed(0)}%)`}`;
  const driver = b.driver - a.driver;
  const fleets = b.fleets - a.fleets;
  const own = b.exchange - a.exchange;
  const agents = b.agents - a.agents;
  return (
    `cpu: exchange ${s(own + agents)} (process ${s(own)}, agents' service ${s(agents)}), ` +
    `postgres ${s(cpuMsDelta(a.postgres, b.postgres))} (all backends), ` +
    `bench ${s(driver + fleets)} (driver ${s(driver)}, fleets ${s(fleets)})`
  );
}
