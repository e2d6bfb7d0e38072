// A suspended provider's agent is refused by the agents' service within 10 s
// (docs/api/admin.md "suspend"): the service runs in its own process with its
// own token cache (accounts/directory.ts), which the operators' API cannot
// drop on the spot; it renews what it keeps every RENEW_EVERY_MS, so what it
// shows is never older than the cache's 10 s while. Time is the test's.

/* eslint-disable @typescript-eslint/unbound-method -- call() invokes each client method with the client as `this` */

import { status } from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { Directory, RENEW_EVERY_MS } from '../accounts/directory.js';
import { ADMIN_TOKEN } from '../market/testing/test-exchange.js';
import { agentHarness } from './testing/agent-harness.js';
import type { AgentHarness } from './testing/agent-harness.js';

const TTL_MS = 10_000;
let t = 0;
let directory: Directory | undefined;
let h: AgentHarness;

beforeAll(async () => {
  h = await agentHarness({
    directory: (db) => (directory = new Directory(db, TTL_MS, 1000, () => t)),
  });
});

afterAll(async () => {
  await h?.close();
});

describe("a suspension reaches the agents' service", () => {
  it('for a suspension at any moment of the renewal cycle, within 10 s', async () => {
    // Suspensions at several offsets into the 5 s renewal cycle.
    for (const offset of [0, 1, 2_500, 4_999, 5_000]) {
      t = 0;
      const p = await h.provider(1);
      const heartbeat = () =>
        h.call(h.client.heartbeat, p.token, { clusterId: p.clusterId, nodes: [] });
      await h.attach(p);
      await heartbeat();

      // The service's renewal runs every RENEW_EVERY_MS, as in its process.
      let renewedTo = 0;
      const renewUntil = async (to: number): Promise<void> => {
        for (; renewedTo + RENEW_EVERY_MS <= to;) {
          renewedTo += RENEW_EVERY_MS;
          t = renewedTo;
          await directory?.renew();
        }
        t = to;
      };
      await renewUntil(offset);
      const r = await h.ex.call('POST', `/v1/admin/accounts/${p.accountId}/suspend`, ADMIN_TOKEN, {
        reason: 'provider under review',
      });
      expect(r.status).toBe(200);

      // Refused by the time 10 s have passed since the suspension, whatever the offset.
      await renewUntil(offset + TTL_MS);
      const refused = await h.failure(heartbeat());
      expect(refused.code).toBe(status.PERMISSION_DENIED);
      expect(refused.details).toContain('suspended');
    }
  });
});
