import { spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { PassThrough } from 'node:stream';

import { describe, expect, it } from 'vitest';

import { SFTP_SERVER, pauseWhileFull } from './pod-exec-backend.js';

describe('SFTP in Kubernetes mode: the workspace image runs its own sftp-server', () => {
  it('an image without sftp-server: the session says so on stderr and exits 127', () => {
    // Every place the command looks, made absent.
    const absent = SFTP_SERVER.replace(
      /\/usr\/(lib|libexec)\/[a-z/-]*sftp-server/g,
      '/nonexistent/sftp-server',
    );
    expect(absent).not.toContain('/usr/');
    const r = spawnSync('/bin/sh', ['-c', absent], { encoding: 'utf8' });
    expect(r.status).toBe(127);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(/gpux: this workspace image has no sftp-server .*kubectl cp/);
  });
});

describe('flow control of exec and port-forward output', () => {
  it('stops reading the WebSocket while the SSH side is behind, and reads on once it caught up', async () => {
    const calls: string[] = [];
    const socket = { pause: () => calls.push('pause'), resume: () => calls.push('resume') };
    const out = new PassThrough();
    pauseWhileFull(out, () => socket);
    // The client library writes what arrives, whatever write() answers.
    const frame = Buffer.alloc(8 * 1024);
    for (let i = 0; i < 8; i++) out.write(frame);
    expect(calls).toEqual(['pause']); // once, however many frames came after
    let read = 0;
    out.on('data', (d: Buffer) => (read += d.length));
    await once(out, 'drain');
    expect(calls).toEqual(['pause', 'resume']);
    expect(read).toBe(8 * frame.length); // nothing lost
    out.write(frame);
    expect(calls).toEqual(['pause', 'resume']); // a reader that keeps up: no pause
  });
});
