import { status as GrpcStatus } from "@grpc/grpc-js";

/** Stable error codes of Switchyard's domain errors, each with the gRPC status it maps to. */
export const ErrorCodes = {
  INVALID_ARGUMENT: GrpcStatus.INVALID_ARGUMENT,
  UNAUTHENTICATED: GrpcStatus.UNAUTHENTICATED,
  PERMISSION_DENIED: GrpcStatus.PERMISSION_DENIED,
  NOT_FOUND: GrpcStatus.NOT_FOUND,
  UNAVAILABLE: GrpcStatus.UNAVAILABLE,
  RESOURCE_EXHAUSTED: GrpcStatus.RESOURCE_EXHAUSTED,
  FAILED_PRECONDITION: GrpcStatus.FAILED_PRECONDITION,
  ALREADY_EXISTS: GrpcStatus.ALREADY_EXISTS,
  CANCELLED: GrpcStatus.CANCELLED,
  ABORTED: GrpcStatus.ABORTED,
} as const;
export type ErrorCode = keyof typeof ErrorCodes;

/**
 * The one error type a gRPC or HTTP handler throws on purpose. Its message is
 * safe to show to the caller; anything else becomes INTERNAL with a generic message.
 */
export class ServiceError extends Error {
  override readonly name = "ServiceError";
  /** When the caller may try again (rate limits, outages): gRPC metadata and HTTP header `retry-after`. */
  readonly retryAfterMs: number | undefined;
  constructor(
    readonly code: ErrorCode,
    message: string,
    options?: ErrorOptions & { retryAfterMs?: number },
  ) {
    super(message, options);
    this.retryAfterMs = options?.retryAfterMs;
  }

  /** The Retry-After value: whole seconds, at least 1. */
  get retryAfterSeconds(): number | undefined {
    return this.retryAfterMs === undefined ? undefined : Math.max(1, Math.ceil(this.retryAfterMs / 1000));
  }

  get grpcStatus(): GrpcStatus {
    return ErrorCodes[this.code];
  }
}

export function isServiceError(error: unknown): error is ServiceError {
  return error instanceof ServiceError;
}

/** A setting that cannot be used; start-up stops with this message. */
export class ConfigError extends Error {
  override readonly name = "ConfigError";
}

export function isConfigError(error: unknown): error is ConfigError {
  return error instanceof ConfigError;
}
