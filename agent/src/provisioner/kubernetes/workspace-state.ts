// What an SSH session of a Kubernetes-mode node gets when its workspace has
// no running pod (pod-exec-backend.ts): the workspace's state read from its
// pods and Deployment, and sessions that only say why and exit, "starting"
// while the pod is pending (75, EX_TEMPFAIL), "unavailable" when the
// customer scaled it to zero or deleted it (69, EX_UNAVAILABLE).

import { PassThrough, Readable } from 'node:stream';

import type { V1Deployment, V1Pod } from '@kubernetes/client-node';

import { ExitLatch } from '../../ssh/exit-latch.js';
import type { ExecHandle, ShellHandle } from '../../ssh/types.js';
import { WORKSPACE_LABEL, workspaceName } from './objects.js';

export type WorkspaceState =
  | { readonly kind: 'running'; readonly pod: string }
  | { readonly kind: 'starting' | 'unavailable'; readonly message: string };

/** What the node's workspace is doing, from its pods and its Deployment. */
export function workspaceState(
  pods: readonly V1Pod[],
  deployment: V1Deployment | undefined,
  nodeIndex: number,
): WorkspaceState {
  const live = pods.filter(
    (p) =>
      p.metadata?.labels?.[WORKSPACE_LABEL] === String(nodeIndex) &&
      p.metadata.deletionTimestamp === undefined,
  );
  const running = live.find((p) => p.status?.phase === 'Running');
  if (running?.metadata?.name !== undefined) return { kind: 'running', pod: running.metadata.name };
  const name = workspaceName(nodeIndex);
  if (deployment === undefined) {
    return {
      kind: 'unavailable',
      message: `gpux: the workspace of this node (deployment/${name}) was deleted; SSH has nothing to run in`,
    };
  }
  if (deployment.spec?.replicas === 0) {
    return {
      kind: 'unavailable',
      message: `gpux: workspace scaled to zero; \`kubectl scale deployment/${name} --replicas=1\` brings SSH back`,
    };
  }
  const pending = live[0];
  const waiting = pending?.status?.containerStatuses?.[0]?.state?.waiting?.reason;
  const why = waiting ?? pending?.status?.phase ?? 'no pod yet';
  return {
    kind: 'starting',
    message: `gpux: workspace starting (${why}); try again shortly`,
  };
}

/** A session that only says why it cannot run and exits. */
export class Refusal {
  constructor(
    readonly message: string,
    readonly code: number,
  ) {}
}

export function refusedShell(r: Refusal): ShellHandle {
  const exit = new ExitLatch();
  const data = new ExitLatchData();
  setImmediate(() => {
    data.emit(Buffer.from(`${r.message}\r\n`));
    exit.set({ code: r.code });
  });
  return {
    write: () => undefined,
    onData: (listener) => data.on(listener),
    resize: () => undefined,
    pause: () => undefined,
    resume: () => undefined,
    onExit: (listener) => exit.on(listener),
    hangup: () => undefined,
    kill: () => Promise.resolve(),
  };
}

export function refusedExec(r: Refusal): ExecHandle {
  const exit = new ExitLatch();
  const stdin = new PassThrough();
  stdin.resume();
  const stdout = Readable.from([]);
  const stderr = Readable.from([Buffer.from(`${r.message}\n`)]);
  let ended = 0;
  const ended1 = (): void => {
    if (++ended === 2) exit.set({ code: r.code });
  };
  stdout.on('end', ended1);
  stderr.on('end', ended1);
  return {
    stdin,
    stdout,
    stderr,
    onExit: (listener) => exit.on(listener),
    hangup: () => undefined,
    kill: () => Promise.resolve(),
  };
}

/** Data written before anyone listens is kept for the first listener. */
class ExitLatchData {
  private readonly pending: Buffer[] = [];
  private listener: ((d: Buffer) => void) | undefined;
  emit(d: Buffer): void {
    if (this.listener === undefined) this.pending.push(d);
    else this.listener(d);
  }
  on(listener: (d: Buffer) => void): void {
    this.listener = listener;
    for (const d of this.pending.splice(0)) listener(d);
  }
}
