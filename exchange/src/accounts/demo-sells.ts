// `gpux exchange` on the demo data (D34) with no agent listing the demo
// cluster: two of its nodes offered for sale through the API, so there is
// something to buy.

import type { FastifyInstance } from 'fastify';

import type { Database } from '../db/database.js';
import type { Logger } from '../logger.js';
import type { DemoTokens } from './demo.js';

/** Something to buy when no agent lists the demo cluster: two of its nodes. */
export async function offerDemoNodes(
  app: FastifyInstance,
  demo: DemoTokens,
  db: Database,
  logger: Logger,
): Promise<void> {
  const offered = await db.query(
    'SELECT 1 FROM orders WHERE cluster_id = $1 AND book_state IS NOT NULL LIMIT 1',
    [demo.clusterId],
  );
  if (offered.length > 0) return;
  const sell = await app.inject({
    method: 'POST',
    url: '/v1/orders',
    headers: { authorization: `Bearer ${demo.providerToken}` },
    payload: {
      side: 'sell',
      gpu_type: 'h100',
      zone: 'us-west-1',
      gpu_count: 16,
      duration_hours: 720,
      limit_price: 2.5,
      cluster_id: demo.clusterId,
    },
  });
  if (sell.statusCode !== 200) {
    logger.warn({ status: sell.statusCode, body: sell.body }, 'the demo sell order was refused');
  }
}
