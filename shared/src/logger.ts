// What every part of both programs logs through: the process's pino logger
// (JSON lines), made once in its main and passed down. Structural, so pino's
// and Fastify's loggers fit and tests can pass their own; nothing here
// writes to the console.

export interface LogFn {
  (obj: object, msg?: string): void;
  (msg: string): void;
}

export interface Logger {
  readonly error: LogFn;
  readonly warn: LogFn;
  readonly info: LogFn;
  readonly debug: LogFn;
}

const nothing: LogFn = () => undefined;

/** For tests and tools that do not want to hear from the code they run. */
export const SILENT_LOGGER: Logger = {
  error: nothing,
  warn: nothing,
  info: nothing,
  debug: nothing,
};
