// A short summary of a V8 CPU profile (`node --cpu-prof`, a .cpuprofile JSON
// file): where the time went, by function (self time) and by package, from a
// given moment on (the bench's load, not the setup before it). V8 stamps
// samples with the monotonic clock in µs, the clock of process.hrtime(), so
// another process can say where the window starts.

import { readFileSync } from 'node:fs';

interface CallFrame {
  readonly functionName: string;
  readonly url: string;
  readonly lineNumber: number;
}

interface ProfileNode {
  readonly id: number;
  readonly callFrame: CallFrame;
  readonly children?: readonly number[];
}

interface CpuProfile {
  readonly nodes: readonly ProfileNode[];
  readonly startTime: number;
  readonly endTime: number;
  readonly samples: readonly number[];
  readonly timeDeltas: readonly number[];
}

export interface ProfileSummary {
  /** Sampled time in the window, ms (idle included). */
  readonly totalMs: number;
  readonly idleMs: number;
  /** Self time by function, ms, largest first. */
  readonly functions: readonly [string, number][];
  /** Self time by package or file group, ms, largest first. */
  readonly groups: readonly [string, number][];
  /** Inclusive time of the exchange's own functions (exchange/dist), ms, largest first. */
  readonly exchangeInclusive: readonly [string, number][];
}

/** Shortens a script URL to where it comes from: a package, a node: module, or our file. */
function groupOf(frame: CallFrame): string {
  const { url, functionName } = frame;
  if (url === '') return functionName.startsWith('(') ? functionName : '(native)';
  if (url.startsWith('node:')) return 'node internals';
  const nm = url.lastIndexOf('/node_modules/');
  if (nm >= 0) {
    const parts = url.slice(nm + '/node_modules/'.length).split('/');
    const pkg = parts[0]?.startsWith('@') ? `${parts[0]}/${parts[1] ?? ''}` : (parts[0] ?? '');
    return pkg;
  }
  const m = /\/(exchange|shared|proto)\/dist\/(.*)$/.exec(url);
  if (m !== null) return `${m[1] ?? ''}/${m[2] ?? ''}`;
  return url;
}

function labelOf(frame: CallFrame): string {
  const name = frame.functionName === '' ? '(anonymous)' : frame.functionName;
  if (frame.url === '') return name;
  return `${name} ${groupOf(frame)}:${frame.lineNumber + 1}`;
}

function sorted(m: Map<string, number>): [string, number][] {
  return [...m.entries()].sort((a, b) => b[1] - a[1]);
}

/**
 * Summarizes `file` from `fromUs` (monotonic clock, µs: process.hrtime.bigint() / 1000n).
 * A sample's time is the delta to the next sample.
 */
export function summarizeProfile(file: string, fromUs: number): ProfileSummary {
  const p = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
  const byId = new Map<number, ProfileNode>();
  for (const n of p.nodes) byId.set(n.id, n);
  const parent = new Map<number, number>();
  for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);

  // Self time per node over the window.
  const selfUs = new Map<number, number>();
  let t = p.startTime;
  let totalUs = 0;
  for (let i = 0; i < p.samples.length; i++) {
    t += p.timeDeltas[i] ?? 0;
    const dt = p.timeDeltas[i + 1] ?? 0;
    if (t < fromUs) continue;
    const id = p.samples[i] ?? 0;
    selfUs.set(id, (selfUs.get(id) ?? 0) + dt);
    totalUs += dt;
  }

  const functions = new Map<string, number>();
  const groups = new Map<string, number>();
  const inclusive = new Map<string, number>();
  let idleUs = 0;
  for (const [id, us] of selfUs) {
    const node = byId.get(id);
    if (node === undefined) continue;
    const frame = node.callFrame;
    if (frame.functionName === '(idle)') idleUs += us;
    functions.set(labelOf(frame), (functions.get(labelOf(frame)) ?? 0) + us);
    groups.set(groupOf(frame), (groups.get(groupOf(frame)) ?? 0) + us);
    // Inclusive time of our own functions: each label once per stack (recursion).
    const seen = new Set<string>();
    for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
      const f = byId.get(cur)?.callFrame;
      if (f === undefined || !/\/exchange\/dist\//.test(f.url)) continue;
      const label = labelOf(f);
      if (seen.has(label)) continue;
      seen.add(label);
      inclusive.set(label, (inclusive.get(label) ?? 0) + us);
    }
  }
  const ms = (list: [string, number][]): [string, number][] => list.map(([k, v]) => [k, v / 1000]);
  return {
    totalMs: totalUs / 1000,
    idleMs: idleUs / 1000,
    functions: ms(sorted(functions)),
    groups: ms(sorted(groups)),
    exchangeInclusive: ms(sorted(inclusive)),
  };
}
