// The value parsers of the customer commands: an instance type, a time
// span, a price.

import { InvalidArgumentError } from 'commander';
import { describe, expect, it } from 'vitest';

import { instanceOf, price, timeSpan } from './parse.js';

const instance = instanceOf(['h100', 'b200']);

describe('instanceOf', () => {
  it('reads <gpus>x<type>', () => {
    expect(instance('16xh100')).toEqual({ gpus: 16, gpuType: 'h100' });
    expect(instance('8XB200')).toEqual({ gpus: 8, gpuType: 'b200' });
  });
  it.each(['12xh100', '0xh100', 'h100', '8xh999', '8x'])('refuses %s', (v) => {
    expect(() => instance(v)).toThrow(InvalidArgumentError);
  });
});

describe('timeSpan and price', () => {
  it('reads seconds, minutes and hours', () => {
    expect([timeSpan('90'), timeSpan('90s'), timeSpan('10m'), timeSpan('2h')]).toEqual([
      90_000, 90_000, 600_000, 7_200_000,
    ]);
    expect(() => timeSpan('0s')).toThrow(InvalidArgumentError);
    expect(() => timeSpan('5d')).toThrow(InvalidArgumentError);
  });
  it('a price is dollars above 0 in whole cents', () => {
    expect(price('2.50')).toBe(2.5);
    expect(() => price('0')).toThrow(InvalidArgumentError);
    expect(() => price('2.505')).toThrow(InvalidArgumentError);
  });
});
