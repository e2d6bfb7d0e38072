import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { describe, expect, it } from 'vitest';
import {
  SignalRefusedError,
  killSessions,
  membersOf,
  parseProcStat,
  signalGroup,
} from './process-tree.js';
import type { ProcStat } from './process-tree.js';

function statLine(
  pid: number,
  comm: string,
  state: string,
  ppid: number,
  pgrp: number,
  session: number,
  start: number,
): string {
  const middle = Array.from({ length: 15 }, (_, i) => String(i)).join(' ');
  return `${pid} (${comm}) ${state} ${ppid} ${pgrp} ${session} ${middle} ${start} 123 456\n`;
}

function proc(
  pid: number,
  pgrp: number,
  session: number,
  startTime: number,
  state = 'S',
): ProcStat {
  return { pid, state, ppid: 1, pgrp, session, startTime };
}

describe('/proc/<pid>/stat', () => {
  it('reads pid, state, parent, group, session and start time', () => {
    expect(parseProcStat(statLine(42, 'sleep', 'S', 41, 40, 39, 777))).toEqual({
      pid: 42,
      state: 'S',
      ppid: 41,
      pgrp: 40,
      session: 39,
      startTime: 777,
    });
  });

  it('copes with spaces and parentheses in the command name', () => {
    expect(parseProcStat(statLine(7, 'a) (b c)', 'Z', 1, 7, 7, 9))).toMatchObject({
      pid: 7,
      state: 'Z',
      session: 7,
      startTime: 9,
    });
  });

  it('refuses what is not a stat line', () => {
    expect(parseProcStat('')).toBeUndefined();
    expect(parseProcStat('12 (x) S 1 2')).toBeUndefined();
  });

  it('reads this process as the kernel prints it', () => {
    const self = parseProcStat(readFileSync('/proc/self/stat', 'latin1'));
    expect(self?.pid).toBe(process.pid);
    expect(self?.state).toMatch(/^[RS]$/);
  });
});

describe('members of login sessions', () => {
  const ours = { sid: 100, startTime: 5000 };

  it('are the live processes with that session id, in any process group', () => {
    const processes = [
      proc(100, 100, 100, 5000), // the leader
      proc(101, 100, 100, 5001), // a child in its group
      proc(102, 102, 100, 5002), // a job control group of the same session
      proc(103, 103, 100, 5003, 'Z'), // a zombie: already dead
      proc(200, 200, 200, 4000), // someone else
    ];
    const { members, gone } = membersOf(processes, [ours]);
    expect(members.map((p) => p.pid)).toEqual([100, 101, 102]);
    expect(gone).toEqual([]);
  });

  it('still have their session after the leader exited', () => {
    const { members } = membersOf([proc(101, 101, 100, 5001)], [ours]);
    expect(members.map((p) => p.pid)).toEqual([101]);
  });

  it('are none when the session id now belongs to a new leader (pid reused)', () => {
    const processes = [proc(100, 100, 100, 9000), proc(101, 100, 100, 9001)];
    const { members, gone } = membersOf(processes, [ours]);
    expect(members).toEqual([]);
    expect(gone).toEqual([ours]);
  });

  it('a session with no live member is gone', () => {
    const { members, gone } = membersOf([proc(100, 100, 100, 5000, 'Z')], [ours]);
    expect(members).toEqual([]);
    expect(gone).toEqual([ours]);
  });
});

describe('killing a session', () => {
  /** A /proc with these processes; a kill of a group removes its members, or fails with `errno`. */
  function fakeProc(members: ProcStat[], refuse: ReadonlyMap<number, string>) {
    const root = mkdtempSync(join(tmpdir(), 'gpux-proc-'));
    for (const p of members) {
      mkdirSync(join(root, String(p.pid)));
      writeFileSync(
        join(root, String(p.pid), 'stat'),
        statLine(p.pid, 'x', p.state, p.ppid, p.pgrp, p.session, p.startTime),
      );
    }
    const signals: string[] = [];
    const kill = (pid: number, signal: NodeJS.Signals): void => {
      const pgrp = -pid;
      signals.push(`${signal} ${pgrp}`);
      const code = refuse.get(pgrp);
      if (code !== undefined) {
        throw Object.assign(new Error(`kill ${code}`), { code });
      }
      for (const p of members.filter((m) => m.pgrp === pgrp)) {
        rmSync(join(root, String(p.pid)), { recursive: true, force: true });
      }
    };
    return { root, kill, signals };
  }

  it('a group gone meanwhile (ESRCH) is no error', async () => {
    const { root, kill } = fakeProc([proc(100, 100, 100, 5000)], new Map([[100, 'ESRCH']]));
    // ESRCH says the group is gone; this fake keeps its stat, so the rounds run out quietly.
    await expect(
      killSessions([{ sid: 100, startTime: 5000 }], {
        graceMs: 1,
        killWaitMs: 1,
        procRoot: root,
        kill,
      }),
    ).resolves.toBeUndefined();
    rmSync(root, { recursive: true, force: true });
  });

  it('signalGroup: gone (ESRCH) is false, any other refusal throws', () => {
    const failing = (code: string) => () => {
      throw Object.assign(new Error(code), { code });
    };
    expect(signalGroup(123, 'SIGHUP', () => undefined)).toBe(true);
    expect(signalGroup(123, 'SIGHUP', failing('ESRCH'))).toBe(false);
    expect(() => signalGroup(123, 'SIGHUP', failing('EPERM'))).toThrow('EPERM');
  });

  it('a group that refuses its signal (EPERM) does not stop the others; what it leaves running is reported', async () => {
    const { root, kill, signals } = fakeProc(
      [proc(100, 100, 100, 5000), proc(101, 100, 100, 5001), proc(102, 102, 100, 5002)],
      new Map([[102, 'EPERM']]),
    );
    const killing = killSessions([{ sid: 100, startTime: 5000 }], {
      graceMs: 1,
      killWaitMs: 1,
      procRoot: root,
      kill,
    });
    await expect(killing).rejects.toBeInstanceOf(SignalRefusedError);
    await expect(killing).rejects.toMatchObject({ groups: [102], cause: { code: 'EPERM' } });
    // The leader's group got its SIGHUP; the refusing group was asked every round.
    expect(signals[0]).toBe('SIGHUP 100');
    expect(signals.filter((s) => s.endsWith(' 102'))).toEqual([
      'SIGHUP 102',
      'SIGKILL 102',
      'SIGKILL 102',
    ]);
    rmSync(root, { recursive: true, force: true });
  });
});
