export { OrderBook } from './order-book.js';
export type {
  Book,
  BookEvent,
  BookSnapshot,
  CancelResult,
  CollarBand,
  Cents,
  EngineCancelReason,
  Estimate,
  EstimateQuery,
  Fill,
  LastTrade,
  Level,
  Millis,
  OpenOrder,
  OrderInput,
  OrderType,
  PlaceResult,
  RejectCode,
  Side,
} from './types.js';
export { leaseGroups } from './lease-groups.js';
export type { LeaseGroup } from './lease-groups.js';
