// Processes of this machine as the tests look at them (Linux /proc).

import { readFileSync } from 'node:fs';

/** Dead: no /proc entry, or a zombie waiting for init (which here reaps every few seconds). */
export function isDead(pid: number): boolean {
  try {
    return /^State:\s+Z/m.test(readFileSync(`/proc/${pid}/status`, 'utf8'));
  } catch {
    return true;
  }
}
