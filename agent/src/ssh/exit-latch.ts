// A session's exit, remembered: shared by the workspace backends (the local
// one and the Kubernetes pod exec one).

import type { SessionExit } from './types.js';

/** An exit remembered, so a listener added after it still hears it. */
export class ExitLatch {
  private exit: SessionExit | undefined;
  private readonly listeners: ((exit: SessionExit) => void)[] = [];

  get done(): boolean {
    return this.exit !== undefined;
  }

  set(exit: SessionExit): void {
    if (this.exit !== undefined) return;
    this.exit = exit;
    for (const l of this.listeners.splice(0)) l(exit);
  }

  on(listener: (exit: SessionExit) => void): void {
    if (this.exit !== undefined) listener(this.exit);
    else this.listeners.push(listener);
  }
}
