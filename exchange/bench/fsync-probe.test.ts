import { readdirSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { describe, expect, it } from 'vitest';

import { FsyncProbe } from './fsync-probe.js';

describe('FsyncProbe', () => {
  it('times fdatasync calls until stopped, then leaves nothing behind', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'gpux-probe-test-'));
    const probe = new FsyncProbe(dir, 5);
    probe.start();
    await new Promise((r) => setTimeout(r, 200));
    const s = await probe.stop();
    expect(s.samples).toBeGreaterThan(3);
    expect(s.p50).toBeGreaterThan(0);
    expect(s.p50).toBeLessThanOrEqual(s.p99);
    expect(s.p99).toBeLessThanOrEqual(s.max);
    expect(readdirSync(dir)).toEqual([]);
  });
});

describe('FsyncProbe in a directory that does not exist', () => {
  it('does not end the process; stop() reports the failure', async () => {
    const probe = new FsyncProbe(join(tmpdir(), 'gpux-no-such-dir', 'deeper'), 5);
    probe.start();
    await new Promise((r) => setTimeout(r, 50));
    await expect(probe.stop()).rejects.toThrow(/ENOENT/);
  });
});
