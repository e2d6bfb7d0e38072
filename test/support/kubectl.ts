// The real kubectl (issue 13: the machine's dispatcher picks 1.27–1.33 by
// the server's /version) with a given kubeconfig, each run in its own
// directory: its own HOME and a cold discovery cache, so every run asks the
// server everything a customer's first run would. Asynchronous, because the
// Kubernetes API double it usually talks to runs in the test's own process.

import { execFile } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export interface KubectlRun {
  /** The exit code; -1 when kubectl did not exit by itself (killed at the timeout). */
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

export type Kubectl = (kubeconfig: string, ...args: string[]) => Promise<KubectlRun>;

/** A kubectl runner whose runs each get a new directory under `scratch` (removed with it). */
export function kubectlIn(scratch: string, timeoutMs = 60_000): Kubectl {
  let runs = 0;
  return (kubeconfig, ...args) => {
    const dir = join(scratch, `kubectl-${++runs}`);
    mkdirSync(dir, { recursive: true });
    const config = join(dir, 'config');
    writeFileSync(config, kubeconfig, { mode: 0o600 });
    return new Promise((resolve) => {
      execFile(
        'kubectl',
        args,
        {
          env: {
            PATH: process.env['PATH'] ?? '/usr/bin:/bin',
            HOME: dir,
            KUBECONFIG: config,
            KUBECACHEDIR: join(dir, 'cache'),
          },
          timeout: timeoutMs,
        },
        (err, stdout, stderr) => {
          const code = err === null ? 0 : typeof err.code === 'number' ? err.code : -1;
          resolve({ code, stdout, stderr });
        },
      );
    });
  };
}
