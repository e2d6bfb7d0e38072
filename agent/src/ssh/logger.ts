// One logger type for both programs: shared/src/logger.ts.
export { SILENT_LOGGER } from '@gpux/shared';
export type { LogFn, Logger } from '@gpux/shared';
