// The limits of agent-limits.ts are what agent.proto and docs/providers.md
// say, every string and repeated field of a request has one, and the gRPC
// server's message size is just above the largest valid message.

import { readFileSync } from 'node:fs';
import { join } from 'node:path';

import { status } from '@grpc/grpc-js';
import { AgentServiceService, PROTO_DIR } from '@gpux/proto';
import { describe, expect, it } from 'vitest';

import {
  checkAttach,
  checkHeartbeat,
  checkReportFailed,
  checkReportProvisioned,
} from './agent-input.js';
import { FIELD_LIMITS, MAX_CLUSTER_NODES, MAX_MESSAGE_BYTES } from './agent-limits.js';
import { AgentCallError } from './provider-context.js';
import {
  largestAttach,
  largestHeartbeat,
  largestReportFailed,
  largestReportProvisioned,
  longestId,
} from './testing/largest-messages.js';

const proto = readFileSync(join(PROTO_DIR, 'agent.proto'), 'utf8');
const docs = readFileSync(new URL('../../../docs/providers.md', import.meta.url), 'utf8');

/** The messages an agent sends, and the ones inside them. */
const REQUEST_MESSAGES = [
  'AttachRequest',
  'HostFacts',
  'HeartbeatRequest',
  'NodeHealth',
  'Gpu',
  'ListSellsRequest',
  'PublishSellRequest',
  'WithdrawSellRequest',
  'ListLeasesRequest',
  'ReportProvisionedRequest',
  'SshEndpoint',
  'ReportRevokedRequest',
  'ReportFailedRequest',
];

interface ProtoField {
  readonly message: string;
  readonly field: string;
  readonly repeated: boolean;
  readonly type: string;
  /** The comment line right above the field. */
  readonly above: string;
}

function protoFields(): ProtoField[] {
  const fields: ProtoField[] = [];
  for (const m of proto.matchAll(/^message (\w+) \{\n([\s\S]*?)^\}/gm)) {
    const lines = (m[2] ?? '').split('\n');
    lines.forEach((line, i) => {
      const f = /^\s+(repeated )?([\w.]+) (\w+) = \d+;/.exec(line);
      if (f === null) return;
      fields.push({
        message: m[1] ?? '',
        field: f[3] ?? '',
        repeated: f[1] !== undefined,
        type: f[2] ?? '',
        above: (lines[i - 1] ?? '').trim(),
      });
    });
  }
  return fields;
}

function refusal(check: () => void): string | undefined {
  try {
    check();
    return undefined;
  } catch (err) {
    if (!(err instanceof AgentCallError) || err.code !== status.INVALID_ARGUMENT) throw err;
    return err.message;
  }
}

describe('the limits of what an agent sends (issue 18)', () => {
  it('every string and repeated field of a request has a limit, written beside it in agent.proto', () => {
    const fields = protoFields().filter((f) => REQUEST_MESSAGES.includes(f.message));
    const bounded = fields.filter((f) => f.repeated || f.type === 'string');
    expect(bounded.length).toBeGreaterThan(20);
    for (const f of bounded) {
      const limit = FIELD_LIMITS.find((l) => l.message === f.message && l.field === f.field);
      expect(limit, `${f.message}.${f.field} has no limit`).toBeDefined();
      expect(f.above, `${f.message}.${f.field}`).toBe(`// Limit: ${limit?.limit}.`);
    }
    // And no limit names a field agent.proto does not have.
    for (const l of FIELD_LIMITS) {
      expect(fields.some((f) => f.message === l.message && f.field === l.field)).toBe(true);
    }
  });

  it('every limit is in the table of docs/providers.md', () => {
    for (const l of FIELD_LIMITS) {
      const row = new RegExp(
        `^\\| \`${l.message}\\.${l.field}\` +\\| ${l.limit.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} +\\|`,
        'm',
      );
      expect(docs, `${l.message}.${l.field}`).toMatch(row);
    }
    expect(docs).toContain(`${MAX_MESSAGE_BYTES.toLocaleString('en-US')} bytes`);
  });

  it('the largest valid messages pass the checks; one byte more in any field is refused naming it', () => {
    const cls = longestId('cls');
    const lse = longestId('lse');
    expect(refusal(() => checkAttach(largestAttach(cls)))).toBeUndefined();
    expect(refusal(() => checkHeartbeat(largestHeartbeat(cls)))).toBeUndefined();
    expect(
      refusal(() => checkReportProvisioned(largestReportProvisioned(cls, lse))),
    ).toBeUndefined();
    expect(refusal(() => checkReportFailed(largestReportFailed(cls, lse)))).toBeUndefined();

    const attach = largestAttach(cls);
    expect(
      refusal(() =>
        checkAttach({ ...attach, host: { ...attach.host!, os: `${attach.host!.os}x` } }),
      ),
    ).toBe('host.os is at most 256 bytes, got 257');
    const beat = largestHeartbeat(cls, ['node-1']);
    const node = beat.nodes[0]!;
    const gpu = node.gpus[0]!;
    expect(
      refusal(() =>
        checkHeartbeat({
          ...beat,
          nodes: [{ ...node, gpus: [{ ...gpu, uuid: `${gpu.uuid}é` }] }],
        }),
      ),
    ).toBe('nodes[0].gpus[0].uuid is at most 300 bytes, got 302');
    expect(
      refusal(() => checkHeartbeat({ ...beat, nodes: [{ ...node, gpus: [...node.gpus, gpu] }] })),
    ).toBe('nodes[0].gpus has at most 8 entries (a node is sold whole, 8 GPUs), got 9');
    expect(
      refusal(() =>
        checkReportFailed({ ...largestReportFailed(cls, lse), reason: 'r'.repeat(1025) }),
      ),
    ).toBe('reason is at most 1024 bytes, got 1025');
  });

  it('the gRPC message size is at least the largest valid message of each kind, and not far above', () => {
    const cls = longestId('cls');
    const lse = longestId('lse');
    const sizes = {
      Attach: AgentServiceService.attach.requestSerialize(largestAttach(cls)).length,
      Heartbeat: AgentServiceService.heartbeat.requestSerialize(largestHeartbeat(cls)).length,
      ReportProvisioned: AgentServiceService.reportProvisioned.requestSerialize(
        largestReportProvisioned(cls, lse),
      ).length,
      ReportFailed: AgentServiceService.reportFailed.requestSerialize(largestReportFailed(cls, lse))
        .length,
    };
    const largest = Math.max(...Object.values(sizes));
    // A heartbeat of every node of the largest cluster is the largest message.
    expect(sizes.Heartbeat).toBe(largest);
    expect(largest).toBeGreaterThan(MAX_CLUSTER_NODES * 5_000);
    expect(MAX_MESSAGE_BYTES).toBeGreaterThanOrEqual(largest);
    expect(MAX_MESSAGE_BYTES).toBeLessThanOrEqual(largest * 1.15);
  });
});
