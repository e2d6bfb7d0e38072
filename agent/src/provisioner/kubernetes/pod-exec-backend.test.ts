import { spawnSync } from 'node:child_process';

import { describe, expect, it } from 'vitest';

import { SFTP_SERVER } from './pod-exec-backend.js';

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
