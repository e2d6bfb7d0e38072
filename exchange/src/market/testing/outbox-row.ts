// An outbox row for tests of the write path, where what the event says does not matter.

import type { OutboxRow } from '../rows.js';

export function testOutboxRow(eventId: string, createdMs = 0): OutboxRow {
  return {
    event_id: eventId,
    subject: 'gpux.test',
    payload: {
      kind: 'lease.revoke',
      event_id: eventId,
      lease_id: 'lse_test',
      cluster_id: 'cls_test',
      namespace: 'gpux-lse-test',
      nodes: [],
      reason: 'terminated',
      at_ms: createdMs,
    },
    created_ms: createdMs,
  };
}
