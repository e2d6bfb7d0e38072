import { existsSync } from 'node:fs';
import { basename, isAbsolute, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { PROTO_DIR } from './index.js';

describe('PROTO_DIR', () => {
  it('is the absolute path of the proto package', () => {
    expect(isAbsolute(PROTO_DIR)).toBe(true);
    expect(basename(PROTO_DIR)).toBe('proto');
    expect(existsSync(join(PROTO_DIR, 'package.json'))).toBe(true);
  });
});

describe('the generated agent contract', () => {
  it('round-trips a message with a oneof, timestamps and repeated fields', async () => {
    const { PublishSellResponse, ListLeasesResponse } = await import('./gen/agent.js');
    const order = {
      orderId: 'ord_1',
      nodes: 2,
      priceCents: 250,
      windowEnd: new Date('2026-11-30T00:00:00Z'),
      expiresAt: new Date('2026-11-29T23:00:00.001Z'),
      remainingNodes: 2,
    };
    const sell = PublishSellResponse.decode(
      PublishSellResponse.encode({ result: { $case: 'order', value: order } }).finish(),
    );
    expect(sell.result).toEqual({ $case: 'order', value: order });
    const refused = PublishSellResponse.decode(
      PublishSellResponse.encode({
        result: { $case: 'refusal', value: { code: 'price_out_of_collar', message: 'no' } },
      }).finish(),
    );
    expect(refused.result?.$case).toBe('refusal');
    const leases = ListLeasesResponse.fromPartial({
      leases: [{ leaseId: 'lse_1', nodes: [{ hostname: 'n1', sshUser: 'lse-1-1' }] }],
    });
    expect(ListLeasesResponse.decode(ListLeasesResponse.encode(leases).finish())).toEqual(leases);
  });
});
