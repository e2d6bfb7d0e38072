// Finding and ending every process of a login session on this host, from
// /proc. Each shell and command the local backend starts leads a session of
// its own (setsid: node-pty does it, so does `spawn({detached: true})`), and
// every process it starts, in whatever process group job control puts it,
// keeps that session id. Killing only the leader is not enough: a `sleep`
// outlives its killed `sh -c`.
//
// A session is named by its leader's pid AND start time: the kernel does not
// hand out a pid that is still some session's id, so while members remain
// the id is ours; once it is free again a new leader with that pid has a
// different start time and is not mistaken for ours.

import { readFileSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import { setTimeout as delay } from 'node:timers/promises';

import { hasErrno } from './errno.js';

export interface ProcStat {
  readonly pid: number;
  /** R, S, D, Z (zombie: already dead), T, … */
  readonly state: string;
  readonly ppid: number;
  readonly pgrp: number;
  readonly session: number;
  /** Clock ticks after boot. */
  readonly startTime: number;
}

export interface SessionRef {
  readonly sid: number;
  readonly startTime: number;
}

/** One `/proc/<pid>/stat` line; the command name may hold spaces and parentheses. */
export function parseProcStat(text: string): ProcStat | undefined {
  const open = text.indexOf(' (');
  const close = text.lastIndexOf(')');
  if (open < 0 || close < open) return undefined;
  const pid = Number(text.slice(0, open));
  // Fields after the name, from field 3 (state) on; starttime is field 22.
  const rest = text.slice(close + 2).split(' ');
  const state = rest[0];
  const nums = [rest[1], rest[2], rest[3], rest[19]].map(Number);
  const [ppid, pgrp, session, startTime] = nums;
  if (
    state === undefined ||
    !Number.isInteger(pid) ||
    ppid === undefined ||
    pgrp === undefined ||
    session === undefined ||
    startTime === undefined ||
    nums.some((n) => !Number.isInteger(n))
  ) {
    return undefined;
  }
  return { pid, state, ppid, pgrp, session, startTime };
}

/**
 * Every process visible in /proc (those that vanish while reading are
 * skipped). A full scan is not cheap (25-50 ms for 130 processes on the
 * test VMs), so it runs in the thread pool and only where needed.
 */
export async function readProcesses(procRoot = '/proc'): Promise<ProcStat[]> {
  const names = (await readdir(procRoot)).filter((n) => /^\d+$/.test(n));
  const stats = await Promise.all(names.map((n) => readStat(Number(n), procRoot)));
  return stats.filter((s): s is ProcStat => s !== undefined);
}

async function readStat(pid: number, procRoot: string): Promise<ProcStat | undefined> {
  try {
    return parseProcStat(await readFile(`${procRoot}/${pid}/stat`, 'latin1'));
  } catch (err) {
    // Exited (and reaped) meanwhile.
    if (hasErrno(err, 'ENOENT', 'ESRCH')) return undefined;
    throw err;
  }
}

/** The session a just-started leader leads (read at once, before it can be reaped). */
export function sessionOf(pid: number, procRoot = '/proc'): SessionRef {
  const stat = parseProcStat(readFileSync(`${procRoot}/${pid}/stat`, 'latin1'));
  if (stat === undefined) throw new Error(`cannot read ${procRoot}/${pid}/stat`);
  return { sid: pid, startTime: stat.startTime };
}

/**
 * The live (not zombie) members of the given sessions, and the sessions
 * that have none left (or whose id now belongs to someone else).
 */
export function membersOf(
  processes: readonly ProcStat[],
  refs: readonly SessionRef[],
): { members: ProcStat[]; gone: SessionRef[] } {
  const byPid = new Map(processes.map((p) => [p.pid, p]));
  const ours = new Set<number>();
  const gone: SessionRef[] = [];
  for (const ref of refs) {
    const leader = byPid.get(ref.sid);
    if (leader !== undefined && leader.startTime !== ref.startTime) gone.push(ref);
    else ours.add(ref.sid);
  }
  const members = processes.filter((p) => ours.has(p.session) && p.state !== 'Z');
  const live = new Set(members.map((p) => p.session));
  for (const sid of ours) {
    if (!live.has(sid)) gone.push(refs.find((r) => r.sid === sid) as SessionRef);
  }
  return { members, gone };
}

export interface KillOptions {
  /** How long SIGHUP gets before SIGKILL. */
  readonly graceMs: number;
  readonly procRoot?: string;
  /** How long each SIGKILL round waits for the members to go. Default 5 s. */
  readonly killWaitMs?: number;
  /** process.kill (tests give another). */
  readonly kill?: (pid: number, signal: NodeJS.Signals) => void;
}

/** Process groups of a session that could not be signalled (EPERM: a member changed its user). */
export class SignalRefusedError extends Error {
  override readonly name = 'SignalRefusedError';
  constructor(
    readonly groups: readonly number[],
    options?: ErrorOptions,
  ) {
    super(`process groups ${groups.join(', ')} could not be signalled; they still run`, options);
  }
}

const POLL_MS = 20;
const KILL_WAIT_MS = 5_000;

/**
 * SIGHUP to every process group of the sessions, SIGKILL to what is left
 * after `graceMs`; resolves when no member is alive (or after SIGKILL has
 * had 5 s: a process in uninterruptible sleep dies when its I/O ends).
 *
 * A full /proc scan is slow, so the leader's own group (the leader and the
 * children it did not put into job-control groups) gets its SIGHUP first,
 * if the leader is still the one we started. Each signal round then starts
 * with a full scan, which finds the other groups and whatever was forked
 * meanwhile; between scans only the known members are watched.
 */
export async function killSessions(
  refs: readonly SessionRef[],
  options: KillOptions,
): Promise<void> {
  const procRoot = options.procRoot ?? '/proc';
  const kill = options.kill ?? ((pid, signal) => process.kill(pid, signal));
  // A group that refuses a signal does not stop the others from getting theirs.
  const refused = new Map<number, unknown>();
  const signal = (pgrp: number, sig: NodeJS.Signals): void => {
    try {
      signalGroup(pgrp, sig, kill);
    } catch (err) {
      refused.set(pgrp, err);
    }
  };
  for (const ref of refs) {
    // Its pid, and so its group id, cannot have been reused while the
    // leader (even a zombie one) still has the start time we recorded.
    const leader = await readStat(ref.sid, procRoot);
    if (leader?.startTime === ref.startTime) signal(ref.sid, 'SIGHUP');
  }
  const killWaitMs = options.killWaitMs ?? KILL_WAIT_MS;
  const rounds: [NodeJS.Signals, number][] = [
    ['SIGHUP', options.graceMs],
    ['SIGKILL', killWaitMs],
    ['SIGKILL', killWaitMs],
  ];
  for (const [sig, waitMs] of rounds) {
    const members = membersOf(await readProcesses(procRoot), refs).members;
    if (members.length === 0) return;
    for (const pgrp of new Set(members.map((p) => p.pgrp))) signal(pgrp, sig);
    await waitGone(members, waitMs, procRoot);
  }
  if (refused.size === 0) return;
  const left = membersOf(await readProcesses(procRoot), refs).members;
  const stuck = [...refused.keys()].filter((g) => left.some((p) => p.pgrp === g));
  if (stuck.length > 0) {
    throw new SignalRefusedError(stuck, { cause: refused.get(stuck[0] ?? 0) });
  }
}

async function waitGone(members: readonly ProcStat[], ms: number, procRoot: string): Promise<void> {
  const deadline = Date.now() + ms;
  let left = members;
  while (left.length > 0 && Date.now() < deadline) {
    await delay(POLL_MS);
    const now = await Promise.all(left.map((p) => readStat(p.pid, procRoot)));
    left = left.filter((p, i) => {
      const stat = now[i];
      return stat !== undefined && stat.startTime === p.startTime && stat.state !== 'Z';
    });
  }
}

/**
 * Signals a process group; false when the group has ended meanwhile (ESRCH).
 * Any other refusal (EPERM: a member runs as another user now) throws.
 * A process group never spans two sessions, so signalling the groups of a
 * session's members reaches exactly that session.
 */
export function signalGroup(
  pgrp: number,
  signal: NodeJS.Signals,
  kill: (pid: number, signal: NodeJS.Signals) => void = (pid, sig) => process.kill(pid, sig),
): boolean {
  try {
    kill(-pgrp, signal);
    return true;
  } catch (err) {
    if (hasErrno(err, 'ESRCH')) return false;
    throw err;
  }
}
