import { describe, expect, it } from 'vitest';

import { parseNvidiaSmiCsv } from './nvidia-smi.js';

describe('nvidia-smi CSV (--format=csv,noheader,nounits)', () => {
  it('reads one GPU per line', () => {
    const out =
      '0, NVIDIA H100 80GB HBM3, GPU-7d5c1b2e-0000-1111-2222-333344445555, 81559, 3, 34\n' +
      '1, NVIDIA H100 80GB HBM3, GPU-8e6d2c3f-0000-1111-2222-333344445555, 81559, 100, 71\n';
    expect(parseNvidiaSmiCsv(out)).toEqual([
      {
        index: 0,
        name: 'NVIDIA H100 80GB HBM3',
        uuid: 'GPU-7d5c1b2e-0000-1111-2222-333344445555',
        memoryTotalMib: 81559,
        utilizationPercent: 3,
        temperatureC: 34,
      },
      {
        index: 1,
        name: 'NVIDIA H100 80GB HBM3',
        uuid: 'GPU-8e6d2c3f-0000-1111-2222-333344445555',
        memoryTotalMib: 81559,
        utilizationPercent: 100,
        temperatureC: 71,
      },
    ]);
  });

  it('keeps zeros (systeminformation drops them) and reads [N/A] as 0', () => {
    const [gpu] = parseNvidiaSmiCsv('0, Tesla T4, GPU-1, 15360, 0, [N/A]\n');
    expect(gpu).toMatchObject({ utilizationPercent: 0, temperatureC: 0 });
    expect(parseNvidiaSmiCsv('0, X, GPU-1, 1, [Not Supported], 30')[0]?.utilizationPercent).toBe(0);
  });

  it('rejoins a name that holds a comma', () => {
    expect(parseNvidiaSmiCsv('2, Odd, Name, GPU-2, 100, 1, 2')[0]).toMatchObject({
      index: 2,
      name: 'Odd, Name',
      uuid: 'GPU-2',
    });
  });

  it('no GPU: empty output, empty list', () => {
    expect(parseNvidiaSmiCsv('\n')).toEqual([]);
  });

  it('refuses lines it cannot read, naming the line', () => {
    expect(() => parseNvidiaSmiCsv('0, X, GPU-1, 1, 2')).toThrow(/line 1 has 5 fields/);
    expect(() => parseNvidiaSmiCsv('0, X, GPU-1, lots, 2, 3')).toThrow(/line 1 is not/);
    expect(() =>
      parseNvidiaSmiCsv('NVIDIA-SMI has failed, because, it, could, not, communicate'),
    ).toThrow(/line 1 is not/);
  });
});
