import { describe, expect, it } from 'vitest';

import { natsConfig } from './nats-config.js';

describe('gpux nats-config (deploy/nats/README.md)', () => {
  it('prints the exchange user and one user per cluster, and writes each seed, never printing one', () => {
    const seeds = new Map<string, string>();
    const r = natsConfig(
      ['--cluster', 'cls_01m84vfhv8jbh8rbvv0x0000aa', '--out', '/keys'],
      (file, seed) => seeds.set(file, seed),
    );
    expect(r.exitCode).toBe(0);
    expect([...seeds.keys()]).toEqual([
      '/keys/exchange.nk',
      '/keys/cls_01m84vfhv8jbh8rbvv0x0000aa.nk',
    ]);
    for (const seed of seeds.values()) {
      expect(seed).toMatch(/^SU[A-Z2-7]{56}$/);
      expect(r.stdout).not.toContain(seed);
    }
    expect(r.stdout).toContain(
      '$JS.API.CONSUMER.MSG.NEXT.GPUX_EVENTS.agent_cls_01m84vfhv8jbh8rbvv0x0000aa',
    );
    expect(r.stdout.match(/nkey: "U[A-Z2-7]{55}"/g)).toHaveLength(2);
  });

  it('refuses a missing or malformed cluster id with the usage', () => {
    expect(natsConfig([]).exitCode).toBe(2);
    expect(natsConfig(['--cluster', 'alpha']).stderr).toMatch(/not a cluster id: alpha/);
    expect(natsConfig(['--bogus']).stderr).toMatch(/unknown argument --bogus/);
  });
});
