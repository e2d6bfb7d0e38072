// What the console reads: the API's schemas as docs/api/openapi.json
// describes them, from the types `npm run gen:client` generates from it
// (shared/src/gen/api.ts). Only aliases here: a change of a schema the
// console reads fails its typecheck (npm run typecheck), not the page.

import type { components } from '@gpux/shared/api';

/** Every schema of the API, by name (the Actions page checks its bodies against them). */
export type Schemas = components['schemas'];

export type Session = Schemas['ConsoleSession'];

/** GET /v1/admin/fleet, and the `fleet` event of GET /v1/console/events. */
export type Fleet = Schemas['Fleet'];
export type FleetProvider = Schemas['FleetProvider'];
export type FleetCluster = Schemas['FleetCluster'];
export type FleetNode = Schemas['FleetNode'];
export type FleetGpu = Schemas['FleetGpu'];
export type Earnings = Schemas['FleetEarnings'];
/** The `leases` event of GET /v1/console/events. */
export type LeaseCounts = Schemas['ConsoleLeaseCounts'];

/** GET /v1/admin/clusters/{id}/history. */
export type ClusterHistory = Schemas['ClusterHistory'];
export type StatusChange = Schemas['ClusterStatusChange'];
/** GET /v1/admin/leases?state=…. */
export type LeaseList = Schemas['AdminLeaseList'];
export type LeaseListItem = Schemas['AdminLeaseListItem'];
/** GET /v1/admin/platform/days. */
export type PlatformDays = Schemas['PlatformDays'];
/** GET /v1/admin/audit. */
export type AuditList = Schemas['AuditList'];
export type AuditEntry = Schemas['AuditEntry'];
/** What POST /v1/admin/accounts/{id}/tokens answers (the Actions page shows the token). */
export type IssuedToken = Schemas['IssuedToken'];

/** The market data, as any client reads it. */
export type OrderBook = Schemas['OrderBook'];
export type Candles = Schemas['Candles'];
export type Candle = Schemas['Candle'];
export type FeedSnapshot = Schemas['FeedSnapshot'];
export type FeedLevel = Schemas['FeedLevel'];
/** A price level as the depth chart draws it (the API's also counts its orders). */
export type Level = Pick<Schemas['Level'], 'price' | 'gpus'>;
export type GpuType = OrderBook['gpu_type'];
export type Zone = OrderBook['zone'];
