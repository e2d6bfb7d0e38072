// The human output of leases (docs/api/leases.md): how to connect to each
// lease a buy made.

import type { Schemas } from './api.js';
import { parseEndpoint } from './ssh-endpoint.js';

type Lease = Schemas['LeaseDetail'];

/** How to reach each ready lease: its ssh command line per endpoint. */
export function connectLines(leases: readonly Lease[], ready: ReadonlySet<string>): string {
  const lines: string[] = [];
  for (const l of leases) {
    if (!ready.has(l.lease_id)) continue;
    lines.push('', `lease ${l.lease_id} (${l.instance_type} in ${l.zone}) is ready:`);
    for (const raw of l.ssh_endpoints) {
      const e = parseEndpoint(raw);
      lines.push(e === undefined ? `  ${raw}` : `  ssh -p ${e.port} ${e.user}@${e.host}`);
    }
  }
  return lines.length === 0 ? '' : `${lines.join('\n')}\n`;
}
