// Event payloads are external input: checked field by field before the
// agent acts on them (shared/src/events.ts has their shape).

import { isId } from '@gpux/shared';
import type {
  LeaseEvent,
  LeaseNodeAccess,
  LeaseProvisionEvent,
  LeaseRevokeEvent,
} from '@gpux/shared';

const REVOKE_REASONS: readonly LeaseRevokeEvent['reason'][] = [
  'terminated',
  'expired',
  'failed',
  'resold',
];

export class EventFormatError extends Error {
  override readonly name = 'EventFormatError';
}

type Obj = Record<string, unknown>;

function field<T>(o: Obj, name: string, ok: (v: unknown) => v is T, what: string): T {
  const v = o[name];
  if (!ok(v)) throw new EventFormatError(`${name} must be ${what}`);
  return v;
}

const isString = (v: unknown): v is string => typeof v === 'string' && v !== '';
const isTime = (v: unknown): v is number => Number.isSafeInteger(v) && (v as number) >= 0;
const isCount = (v: unknown): v is number => Number.isSafeInteger(v) && (v as number) > 0;
const isLeaseId = (v: unknown): v is string => isId('lse_', v);
const isStrings = (v: unknown): v is string[] =>
  Array.isArray(v) && v.every((s) => typeof s === 'string');

function isNodes(v: unknown): v is LeaseNodeAccess[] {
  return (
    Array.isArray(v) &&
    v.length > 0 &&
    v.every(
      (n) =>
        typeof n === 'object' &&
        n !== null &&
        isString((n as Obj)['hostname']) &&
        isString((n as Obj)['ssh_user']),
    )
  );
}

export function parseLeaseEvent(data: string): LeaseEvent {
  let raw: unknown;
  try {
    raw = JSON.parse(data);
  } catch (err) {
    if (!(err instanceof SyntaxError)) throw err;
    throw new EventFormatError('not JSON', { cause: err });
  }
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    throw new EventFormatError('not a JSON object');
  }
  const o = raw as Obj;
  const kind = o['kind'];
  const common = {
    event_id: field(o, 'event_id', isString, 'a string'),
    lease_id: field(o, 'lease_id', isLeaseId, 'a lease id'),
    cluster_id: field(o, 'cluster_id', isString, 'a string'),
    namespace: field(o, 'namespace', isString, 'a string'),
  };
  if (kind === 'lease.provision') {
    const source = o['source_lease_id'];
    if (source !== null && source !== undefined && !isLeaseId(source)) {
      throw new EventFormatError('source_lease_id must be a lease id or null');
    }
    const event: LeaseProvisionEvent = {
      kind,
      ...common,
      account_id: field(o, 'account_id', isString, 'a string'),
      lease_user: field(o, 'lease_user', isString, 'a string'),
      nodes: field(o, 'nodes', isNodes, 'a list of {hostname, ssh_user}'),
      gpu_count: field(o, 'gpu_count', isCount, 'a positive whole number'),
      start_ms: field(o, 'start_ms', isTime, 'a time in ms'),
      end_ms: field(o, 'end_ms', isTime, 'a time in ms'),
      source_lease_id: source ?? null,
      // An event stored before the relay added keys has none: nobody can log in (D32).
      ssh_public_keys:
        o['ssh_public_keys'] === undefined
          ? []
          : field(o, 'ssh_public_keys', isStrings, 'a list of strings'),
    };
    return event;
  }
  if (kind === 'lease.revoke') {
    const event: LeaseRevokeEvent = {
      kind,
      ...common,
      nodes: field(o, 'nodes', isStrings, 'a list of host names'),
      reason: field(
        o,
        'reason',
        (v): v is LeaseRevokeEvent['reason'] => REVOKE_REASONS.includes(v as never),
        REVOKE_REASONS.join(', '),
      ),
      at_ms: field(o, 'at_ms', isTime, 'a time in ms'),
    };
    return event;
  }
  throw new EventFormatError(`unknown kind ${JSON.stringify(kind)}`);
}
