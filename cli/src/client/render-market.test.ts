// The depth chart: asks above the spread, highest first; bids below; each
// bar the GPUs at that price or better, the deepest CHART_WIDTH wide.

import { describe, expect, it } from 'vitest';

import { CHART_WIDTH, depthChart } from './render-market.js';

const plain = { colour: false };

describe('depthChart', () => {
  it('draws cumulative depth from the spread outwards', () => {
    const chart = depthChart(
      [
        { price: 2.2, gpus: 8, orders: 1 },
        { price: 2, gpus: 24, orders: 2 },
      ],
      [
        { price: 2.5, gpus: 16, orders: 2 },
        { price: 3, gpus: 16, orders: 1 },
      ],
      plain,
    );
    const full = '█'.repeat(CHART_WIDTH);
    const half = '█'.repeat(CHART_WIDTH / 2);
    const quarter = '█'.repeat(CHART_WIDTH / 4);
    expect(chart.split('\n')).toEqual([
      `    $3.00 │${full} 32`,
      `ask $2.50 │${half} 16`,
      '          ┼ spread $0.30',
      `bid $2.20 │${quarter} 8`,
      `    $2.00 │${full} 32`,
      '',
    ]);
  });

  it('an empty book says so; one empty side has no spread', () => {
    expect(depthChart([], [], plain)).toBe('(no orders)\n');
    expect(depthChart([], [{ price: 2.5, gpus: 8, orders: 1 }], plain)).toContain(
      '┼ no spread: one side is empty',
    );
  });
});
