import { describe, expect, it } from 'vitest';
import {
  CANCEL_REASONS,
  GPU_TYPES,
  LEASE_STATUSES,
  ZONES,
  isCancelReason,
  isGpuType,
  isLeaseStatus,
  isOrderStatus,
  isOrderType,
  isSide,
  isZone,
} from './enums.js';

describe('enum guards', () => {
  it('accept every listed value', () => {
    expect(GPU_TYPES.every(isGpuType)).toBe(true);
    expect(ZONES.every(isZone)).toBe(true);
    expect(LEASE_STATUSES.every(isLeaseStatus)).toBe(true);
    expect(CANCEL_REASONS.every(isCancelReason)).toBe(true);
    expect(isSide('sell')).toBe(true);
    expect(isOrderType('limit')).toBe(true);
    expect(isOrderStatus('partial')).toBe(true);
  });

  it('reject near misses and non-strings', () => {
    for (const bad of ['H100', 'a100', '', null, undefined, 100, {}]) {
      expect(isGpuType(bad)).toBe(false);
    }
    expect(isZone('us-west-2')).toBe(false);
    expect(isSide('BUY')).toBe(false);
    expect(isOrderStatus('expired')).toBe(false);
    expect(isLeaseStatus('pending')).toBe(false);
    expect(isOrderType('stop')).toBe(false);
  });
});
