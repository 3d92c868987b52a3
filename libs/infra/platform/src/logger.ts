import { pino, type Logger } from "pino";

export type { Logger } from "pino";

/**
 * Fields that may hold credentials. pino replaces them before a line is
 * written, wherever they appear in the objects we log.
 */
export const REDACTED_PATHS = [
  "writeKey",
  "*.writeKey",
  "writeKeys",
  "*.writeKeys",
  "sharedSecret",
  "*.sharedSecret",
  "*.*.sharedSecret",
  "secret",
  "*.secret",
  "authorization",
  "*.authorization",
  "headers.authorization",
  "*.headers.authorization",
  "req.headers.authorization",
  "password",
  "*.password",
  "adminToken",
  "*.adminToken",
];

export interface LoggerOptions {
  service: string;
  level: string;
  /** Where lines go; stdout by default. Tests pass a stream to inspect the output. */
  destination?: pino.DestinationStream;
}

export function createLogger({ service, level, destination }: LoggerOptions): Logger {
  return pino(
    {
      level,
      base: { service, pid: process.pid },
      timestamp: pino.stdTimeFunctions.isoTime,
      redact: { paths: REDACTED_PATHS, censor: "[redacted]" },
      formatters: { level: (label) => ({ level: label }) },
    },
    destination ?? pino.destination({ sync: false }),
  );
}
