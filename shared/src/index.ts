export {
  CANCEL_REASONS,
  TOKEN_SCOPES,
  COLLAR_PERCENT,
  GPU_TYPES,
  GPUS_PER_NODE,
  HOUR_MS,
  LEASE_STATUSES,
  MAX_DURATION_HOURS,
  MIN_DURATION_HOURS,
  MIN_ORDER_VALUE_CENTS,
  ORDER_STATUSES,
  ORDER_TYPES,
  PLATFORM_FEE_PERCENT,
  SIDES,
  ZONES,
  isCancelReason,
  isTokenScope,
  isGpuType,
  isLeaseStatus,
  isOrderStatus,
  isOrderType,
  isSide,
  isZone,
} from './enums.js';
export type {
  CancelReason,
  GpuType,
  LeaseStatus,
  OrderStatus,
  OrderType,
  Side,
  TokenScope,
  Zone,
} from './enums.js';
export {
  ERROR_CODES,
  FIELD_RULES,
  FieldProblems,
  GpuxError,
  InvariantError,
  MAX_FIELD_PROBLEMS,
  ValidationError,
  errorBody,
  fieldError,
  isErrorCode,
} from './errors.js';
export type {
  AllowedValue,
  ErrorBody,
  ErrorCode,
  ErrorDetails,
  FieldProblem,
  FieldRule,
  GpuxErrorOptions,
} from './errors.js';
export { ID_PREFIXES, createIdGenerator, idTime, isId, newId } from './ids.js';
export type { IdGenerator, IdGeneratorOptions, IdPrefix } from './ids.js';
export {
  MAX_CENTS,
  MoneyError,
  assertCents,
  formatDollars,
  mulDivHalfEven,
  parseDollars,
  parsePositiveDollars,
  percentOf,
  roundHalfEvenDiv,
  splitFee,
} from './money.js';
export type { Cents, FeeSplit } from './money.js';
export {
  EVENT_STREAM,
  SUBJECTS,
  SUBJECT_ROOT,
  agentConsumerName,
  agentInboxPrefix,
  leaseNamespace,
  leaseUser,
  sshUserOf,
} from './events.js';
export type {
  LeaseEvent,
  LeaseNodeAccess,
  LeaseProvisionEvent,
  LeaseRevokeEvent,
} from './events.js';
export { isTime, parseTime } from './time.js';
export { BusConsumer, InProcessBus, subjectMatches } from './in-process-bus.js';
export type { BusConsumerOptions, BusMessage } from './in-process-bus.js';
export { parseNatsCredentials } from './nats-credentials.js';
export {
  connectNats,
  describeNats,
  natsConnectionOptions,
  natsServerOf,
  natsUrl,
} from './nats-connection.js';
export type { NatsConnectOptions, NatsServer } from './nats-connection.js';
export type { NatsCredentials } from './nats-credentials.js';
export { SILENT_LOGGER } from './logger.js';
export type { LogFn, Logger } from './logger.js';
export {
  ConfigError,
  LOG_LEVELS,
  SETTINGS_HEADER,
  SettingProblem,
  checkInputs,
  flagOf,
  inTableOrder,
  integer,
  logLevel,
  markdownTable,
  matching,
  onOff,
  oneOf,
  parseFlags,
  plain,
  positive,
  readSettings,
  replaceTableUnder,
  setting,
  settingsHelp,
  settingsRows,
  tableUnder,
  text,
  withDefaults,
  wrap,
} from './settings.js';
export type {
  Env,
  LogLevel,
  ParsedOf,
  Parser,
  Setting,
  SettingInputs,
  SettingValues,
  ValueOf,
} from './settings.js';
