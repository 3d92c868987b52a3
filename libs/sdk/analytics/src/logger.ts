/** Where the client's log lines go. Replace it with the `logger` option (pino, winston and console all fit). */
export interface Logger {
  debug(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
}

/** True when DEBUG names "analytics" (comma- or space-separated, `*` for everything), like the `debug` package. */
export function debugEnabled(debugVariable: string | undefined): boolean {
  if (!debugVariable) return false;
  return debugVariable.split(/[\s,]+/).some((name) => name === "analytics" || name === "*" || name === "analytics:*");
}

/** Writes "analytics <level> <message> <fields as JSON>" lines to stderr. */
export const stderrLogger: Logger = {
  debug: (message, fields) => writeLine("debug", message, fields),
  warn: (message, fields) => writeLine("warn", message, fields),
  error: (message, fields) => writeLine("error", message, fields),
};

function writeLine(level: string, message: string, fields: Record<string, unknown> | undefined): void {
  process.stderr.write(`analytics ${new Date().toISOString()} ${level} ${message}${fields ? ` ${JSON.stringify(fields)}` : ""}\n`);
}

/** Prints nothing: the default unless DEBUG=analytics. */
export const silentLogger: Logger = { debug: () => {}, warn: () => {}, error: () => {} };
