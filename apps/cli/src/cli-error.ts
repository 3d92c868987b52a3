/** A failure the user can act on: printed as one line, no stack. `exitCode` 2 means bad usage. */
export class CliError extends Error {
  override readonly name = "CliError";
  constructor(
    message: string,
    readonly exitCode = 1,
  ) {
    super(message);
  }
}

export function usageError(message: string, command: string): CliError {
  return new CliError(`${message}\nRun \`switchyard ${command} --help\` for usage.`, 2);
}
