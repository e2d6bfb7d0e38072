// Then-step assertions shared by the matching engine's given/when/then tests
// (the builders are in given.ts). Rules: docs/matching.md.

import { expect } from 'vitest';

import type { PlaceResult, RejectCode } from '../types.js';

/** The order was rejected with `code` (its message is not part of the contract). */
export function expectRejected(r: PlaceResult, code: RejectCode): void {
  expect(r).toMatchObject({ ok: false, code });
}
