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
  constructor(
    readonly code: ErrorCode,
    message: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
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
