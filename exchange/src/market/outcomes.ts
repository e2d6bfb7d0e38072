// What the commands of a book (book-state.ts) answer: rows as the command
// left them, or one Refusal (refusal.ts). Routes turn them into views.

import type { Refund } from '../leases/lease-money.js';
import type { ResaleWindow } from '../leases/resale.js';
import type { Refusal } from './refusal.js';
import type { FillRow, LeaseRow, OrderRow } from './rows.js';

/** An order as a command left it, with the fills the command made for it. */
export interface Placed {
  readonly ok: true;
  /** A copy: later commands do not change it. */
  readonly order: OrderRow;
  readonly fills: readonly FillRow[];
}

export type PlaceOutcome = Placed | Refusal;

export type ResellOutcome =
  | (Placed & {
      /** The resold lease as it is now: `refund_cents` is the original refund once sold. */
      readonly sourceLease: LeaseRow;
      readonly window: ResaleWindow;
      /** D27 transfer_time, when a buyer took it at once. */
      readonly transferAt: number | undefined;
    })
  | Refusal;

export type CancelOutcome =
  | { readonly ok: true; readonly cancelledGpus: number; readonly cancelledAt: number }
  /** Not open (any more): filled, cancelled, or not this account's. */
  | { readonly ok: false };

export type TerminateOutcome =
  | {
      readonly ok: true;
      readonly lease: LeaseRow;
      readonly terminatedAt: number;
      readonly refund: Refund;
    }
  | Refusal;

/** An operator failed or revoked a lease (docs/api/admin.md): the lease before and after. */
export type OperatorLeaseOutcome =
  { readonly ok: true; readonly before: LeaseRow; readonly lease: LeaseRow } | Refusal;
