import { describe, expect, it } from 'vitest';

import { contains } from './kube-client.js';
import { MIN_TOKEN_SECONDS, refreshTime, tokenSeconds } from './lease-token.js';
import { execCommand, exitOfStatus } from './pod-exec-backend.js';
import { workspaceState } from './workspace-state.js';

describe('lease tokens (D28): no later than the lease end, refreshed when the server caps them', () => {
  it('asks for the time to the lease end, at least the API server minimum', () => {
    expect(tokenSeconds(0, 3_600_000)).toBe(3_600);
    expect(tokenSeconds(0, 60_000)).toBe(MIN_TOKEN_SECONDS);
  });

  it('refreshes at 80% of a token that ends before the lease; never one that outlives it', () => {
    expect(refreshTime(0, 1_000_000, 5_000_000)).toBe(800_000);
    expect(refreshTime(0, 5_000_000, 5_000_000)).toBe(Number.POSITIVE_INFINITY);
  });
});

describe('get-then-update decides by containment (server defaults do not cause updates)', () => {
  it('compares only what we set', () => {
    expect(contains({ a: 1, b: { c: [1, { d: 2, e: 3 }] } }, { b: { c: [1, { d: 2 }] } })).toBe(
      true,
    );
    expect(contains({ a: 1 }, { a: 2 })).toBe(false);
    expect(contains({ a: [1, 2] }, { a: [1] })).toBe(false);
  });
});

describe('SSH into the workspace pod', () => {
  const running = {
    metadata: { name: 'workspace-1-abc', labels: { 'gpux.io/workspace': '1' } },
    status: { phase: 'Running' },
  };
  const pending = {
    metadata: { name: 'workspace-1-def', labels: { 'gpux.io/workspace': '1' } },
    status: {
      phase: 'Pending',
      containerStatuses: [
        {
          name: 'workspace',
          image: 'x',
          imageID: '',
          ready: false,
          restartCount: 0,
          state: { waiting: { reason: 'ContainerCreating' } },
        },
      ],
    },
  };
  const deployment = (replicas: number) => ({ spec: { replicas, selector: {}, template: {} } });

  it('a running pod is where sessions go', () => {
    expect(workspaceState([pending, running], deployment(1), 1)).toEqual({
      kind: 'running',
      pod: 'workspace-1-abc',
    });
  });

  it('says starting, scaled to zero or deleted instead of hanging', () => {
    expect(workspaceState([pending], deployment(1), 1)).toEqual({
      kind: 'starting',
      message: 'gpux: workspace starting (ContainerCreating); try again shortly',
    });
    const scaled = workspaceState([], deployment(0), 1);
    expect(scaled.kind).toBe('unavailable');
    expect('message' in scaled && scaled.message).toContain('workspace scaled to zero');
    const gone = workspaceState([], undefined, 1);
    expect(gone.kind).toBe('unavailable');
    expect('message' in gone && gone.message).toContain('was deleted');
  });

  it('runs the command with the client environment; reads the exit status from the Status', () => {
    expect(execCommand({ TERM: 'xterm', LANG: 'C.UTF-8' }, 'nvidia-smi')).toEqual([
      'env',
      'TERM=xterm',
      'LANG=C.UTF-8',
      '/bin/sh',
      '-c',
      'nvidia-smi',
    ]);
    expect(exitOfStatus({ status: 'Success' })).toEqual({ code: 0 });
    expect(
      exitOfStatus({
        status: 'Failure',
        reason: 'NonZeroExitCode',
        details: { causes: [{ reason: 'ExitCode', message: '3' }] },
      }),
    ).toEqual({ code: 3 });
    expect(exitOfStatus(undefined)).toEqual({ code: 255 });
  });
});
