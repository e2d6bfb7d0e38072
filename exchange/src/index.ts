export { buildApp } from './app.js';
export type { AppConfig } from './app.js';
export { DEFAULT_CONFIG, loadConfig } from './config.js';
export type { Config } from './config.js';
export { EXCHANGE_SETTINGS, exchangeHelp } from './settings.js';
export { OrderBook, leaseGroups } from './matching/index.js';
export type {
  Book,
  BookEvent,
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
export { JetStreamPublisher } from './events/jetstream-publisher.js';
export type { JetStreamOptions } from './events/jetstream-publisher.js';
export {
  agentPermissions,
  authorizationBlock,
  exchangePermissions,
} from './events/nats-permissions.js';
export type { NatsUser, Permissions } from './events/nats-permissions.js';
export { SILENT_LOGGER } from './logger.js';
export type { Logger } from './logger.js';
export { startExchange } from './server.js';
export { runRekey } from './rekey-command.js';
export type { Exchange, ExchangeOptions, Owned } from './server.js';
export {
  banner,
  connectionLines,
  drainOnSignals,
  exchangeBanner,
  exitOnFatal,
  ownedOrExit,
  readConfig,
  runExchange,
  standbyBanner,
  startOrExit,
  wantsHelp,
} from './main.js';
