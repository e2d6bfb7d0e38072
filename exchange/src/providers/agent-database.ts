// The agents' own PostgreSQL connections (issue 18): the gRPC service's
// reads and writes and the lookups of agents' tokens go through a small pool
// of their own, so a flood of agent calls queues there and the customers'
// REST path never waits behind it for a connection. The market's write
// batches (a sell, a status change) still go through the market's pool.
// Its connections carry the application_name `gpux-exchange-agents`
// (pg_stat_activity tells them apart). The embedded PGlite has one
// connection: there the agents share it.

import type { Database } from '../db/database.js';
import { openPostgres } from '../db/postgres.js';
import type { Logger } from '../logger.js';

export const AGENT_APPLICATION_NAME = 'gpux-exchange-agents';

export function openAgentDatabase(
  databaseUrl: string | undefined,
  connections: number,
  shared: Database,
  logger: Logger,
): Database {
  if (databaseUrl === undefined || shared.kind !== 'postgres') return shared;
  return agentPool(databaseUrl, connections, logger);
}

/** A pool of the agents' own on PostgreSQL (the agents' service process opens its own). */
export function agentPool(databaseUrl: string, connections: number, logger: Logger): Database {
  const url = new URL(databaseUrl);
  url.searchParams.set('application_name', AGENT_APPLICATION_NAME);
  return openPostgres(url.toString(), connections, logger);
}
