/** Base class of every error the client throws, so callers can catch them all at once. */
export class AnalyticsError extends Error {
  override name = "AnalyticsError";
}

/**
 * A call broke a rule and was not queued. `field` is the JSON path of the
 * offending field ("" for the call as a whole) and `rule` a stable rule name:
 * required, type, not_empty, max_length, format, max_size, max_depth,
 * identity_required, value.
 */
export class ValidationError extends AnalyticsError {
  override name = "ValidationError";

  constructor(
    readonly field: string,
    readonly rule: string,
    message: string,
  ) {
    super(message);
  }
}

/** The queue holds `maxQueueSize` calls or `maxQueueBytes` bytes already: this call was not queued. */
export class QueueFullError extends AnalyticsError {
  override name = "QueueFullError";

  constructor(
    readonly messageId: string,
    message: string,
  ) {
    super(message);
  }
}

/** A call was made after close(). */
export class ClosedError extends AnalyticsError {
  override name = "ClosedError";
}

/** An option has a value the client cannot use; `option` names it. */
export class OptionsError extends AnalyticsError {
  override name = "OptionsError";

  constructor(
    readonly option: string,
    message: string,
  ) {
    super(`${option}: ${message}`);
  }
}
