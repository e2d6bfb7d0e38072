export { buildApp } from './app.js';
export type { AppConfig } from './app.js';
export { loadConfig } from './config.js';
export type { Config } from './config.js';
export { MatchingEngine, OrderBook, bookKey, leaseGroups } from './matching/index.js';
export type {
  Book,
  BookEvent,
  BookKey,
  BookSnapshot,
  CancelResult,
  Estimate,
  EstimateQuery,
  Fill,
  LastTrade,
  LeaseGroup,
  OpenOrder,
  OrderInput,
  PlaceResult,
  RejectCode,
} from './matching/index.js';
export { EXCHANGE_NODE_FLAGS } from './node-flags.js';
