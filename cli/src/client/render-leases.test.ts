// Time left in words, highlighted under an hour; the refund's rounding.

import { describe, expect, it } from 'vitest';

import { cents } from './lease-commands.js';
import { span, timeLeft } from './render-leases.js';

describe('span and timeLeft', () => {
  it('in words', () => {
    expect([span(30_000), span(45 * 60_000), span(125 * 60_000), span(50 * 3_600_000)]).toEqual([
      'under a minute',
      '45 min',
      '2 h 05 min',
      '2 d 2 h',
    ]);
  });
  it('under an hour in yellow on a colour terminal; an ended lease has none', () => {
    const end = '2026-11-27T01:00:00Z';
    const now = Date.parse(end) - 30 * 60_000;
    expect(timeLeft({ status: 'active', end_time: end }, now, { colour: true })).toBe(
      '\u001b[33m30 min\u001b[39m',
    );
    expect(timeLeft({ status: 'active', end_time: end }, now - 3_600_000, { colour: true })).toBe(
      '1 h 30 min',
    );
    expect(timeLeft({ status: 'terminated', end_time: end }, now, { colour: true })).toBe('-');
  });
});

describe('cents', () => {
  it('rounds half to even, as the exchange does', () => {
    expect([cents(1.005), cents(1.015), cents(1.0151), cents(2.345), cents(40)]).toEqual([
      1, 1.02, 1.02, 2.34, 40,
    ]);
  });
});
