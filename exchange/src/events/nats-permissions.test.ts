import { readFileSync } from 'node:fs';

import { describe, expect, it } from 'vitest';

import { agentPermissions, authorizationBlock, exchangePermissions } from './nats-permissions.js';

// What `gpux nats-config` writes beside deploy/nats/nats-server.conf, which includes it.
const EXAMPLE = new URL('../../../deploy/nats/authorization.conf', import.meta.url);

describe('the NATS configuration an operator writes (deploy/nats/)', () => {
  it('the example file holds exactly what the code grants (no drift between docs and code)', () => {
    const block = authorizationBlock([
      {
        nkey: 'UEXCHANGEPUBLICNKEYPLACEHOLDERXXXXXXXXXXXXXXXXXXXXXXXXX',
        permissions: exchangePermissions(),
        comment: 'the exchange (seed in exchange.nk)',
      },
      {
        nkey: 'UAGENTPUBLICNKEYPLACEHOLDERXXXXXXXXXXXXXXXXXXXXXXXXXXXX',
        permissions: agentPermissions('cls_example'),
        comment: 'agent of cls_example (seed in cls_example.nk)',
      },
    ]);
    expect(readFileSync(EXAMPLE, 'utf8')).toContain(block);
  });

  it("an agent's grants name only its own consumer and inbox", () => {
    const p = agentPermissions('cls_a');
    for (const subject of [...p.publish.allow, ...p.subscribe.allow]) {
      expect(subject).toMatch(/cls_a/);
      expect(subject).not.toMatch(/\.STREAM\.|DELETE|\*/);
    }
  });
});
