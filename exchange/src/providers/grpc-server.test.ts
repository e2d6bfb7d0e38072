// What the agents' gRPC service answers for what is thrown (issue 20): the
// one table of proto/src/error-status.ts for typed errors, the status an
// AgentCallError names (with its wait), INTERNAL without details otherwise.

import { status } from '@grpc/grpc-js';
import { GpuxError } from '@gpux/shared';
import type { Logger } from '@gpux/shared';
import { describe, expect, it } from 'vitest';

import { RETRY_AFTER_MS, toServiceError } from './grpc-server.js';
import { AgentCallError } from './provider-context.js';

function logged(): { logger: Pick<Logger, 'error'>; lines: unknown[] } {
  const lines: unknown[] = [];
  return { logger: { error: (o: object | string) => void lines.push(o) }, lines };
}

describe('toServiceError', () => {
  it('a not_found reaches the agent as NOT_FOUND, not INVALID_ARGUMENT', () => {
    const { logger, lines } = logged();
    const e = toServiceError(logger, 'ReportRevoked', new GpuxError('not_found', 'no lease x'));
    expect(e).toMatchObject({ code: status.NOT_FOUND, details: 'no lease x' });
    expect(e.metadata).toBeUndefined();
    expect(lines).toEqual([]);
  });

  it.each([
    ['invalid_request', status.INVALID_ARGUMENT],
    ['lease_not_active', status.FAILED_PRECONDITION],
    ['insufficient_capacity', status.FAILED_PRECONDITION],
    ['forbidden', status.PERMISSION_DENIED],
    ['unauthorized', status.UNAUTHENTICATED],
    ['rate_limited', status.RESOURCE_EXHAUSTED],
    ['unavailable', status.UNAVAILABLE],
  ] as const)('a %s is answered %s with its message', (code, expected) => {
    const e = toServiceError(logged().logger, 'PublishSell', new GpuxError(code, 'why'));
    expect(e).toMatchObject({ code: expected, details: 'why', message: 'why' });
  });

  it("RESOURCE_EXHAUSTED past a provider's share carries the wait in retry-after-ms", () => {
    const e = toServiceError(
      logged().logger,
      'Heartbeat',
      new AgentCallError(status.RESOURCE_EXHAUSTED, 'slow down', 1500),
    );
    expect(e.code).toBe(status.RESOURCE_EXHAUSTED);
    expect(e.metadata?.get(RETRY_AFTER_MS)).toEqual(['1500']);
    expect(
      toServiceError(logged().logger, 'Attach', new AgentCallError(status.NOT_FOUND, 'x')),
    ).toMatchObject({ code: status.NOT_FOUND, details: 'x' });
  });

  it('an internal error or anything untyped is INTERNAL, logged, its message not disclosed', () => {
    for (const err of [new GpuxError('internal_error', 'db password wrong'), new Error('boom')]) {
      const { logger, lines } = logged();
      const e = toServiceError(logger, 'ListLeases', err);
      expect(e).toMatchObject({ code: status.INTERNAL, details: 'internal error' });
      expect(lines).toEqual([{ err, method: 'ListLeases' }]);
    }
  });
});
