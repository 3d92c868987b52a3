import { status } from "@grpc/grpc-js";

/**
 * The HTTP status of a gRPC status, as HTTP/JSON gateways commonly map them (google.rpc.Code's
 * documented HTTP equivalents), with one exception: UNAUTHENTICATED from a service means the
 * console's own admin token was refused, a server-side fault (502), not the browser's session.
 */
export function httpStatusOf(code: status): number {
  switch (code) {
    case status.OK:
      return 200;
    case status.CANCELLED:
      return 499;
    case status.INVALID_ARGUMENT:
    case status.FAILED_PRECONDITION:
    case status.OUT_OF_RANGE:
      return 400;
    case status.DEADLINE_EXCEEDED:
      return 504;
    case status.NOT_FOUND:
      return 404;
    case status.ALREADY_EXISTS:
    case status.ABORTED:
      return 409;
    case status.PERMISSION_DENIED:
      return 403;
    case status.UNAUTHENTICATED:
      return 502;
    case status.RESOURCE_EXHAUSTED:
      return 429;
    case status.UNIMPLEMENTED:
      return 501;
    case status.UNAVAILABLE:
      return 503;
    default:
      return 500;
  }
}

/** One problem a message names: the field's path as the service spelled it, and the rule it broke. */
export interface FieldProblem {
  field: string;
  message: string;
}

/** A field path as Switchyard's errors begin: snake or camel case words, dots, [n] or .n indexes. */
const FIELD_PATH = /^([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z0-9_-]+|\[\d+\])*): (.+)$/s;

/**
 * The fields an error message names. Every Switchyard service words a refusal as
 * "field: rule", several joined by "; " (docs/api.md), so the console can show each next to
 * its input. Parts that do not start with a field path are left out.
 */
export function fieldProblems(message: string): FieldProblem[] {
  const problems: FieldProblem[] = [];
  for (const part of message.split("; ")) {
    const match = FIELD_PATH.exec(part);
    if (match) problems.push({ field: match[1]!, message: match[2]! });
  }
  return problems;
}

/** The JSON body of an error answer. */
export interface ErrorBody {
  error: {
    /** The gRPC status name (INVALID_ARGUMENT, ...), or the console's own (UNAUTHENTICATED, ...). */
    code: string;
    message: string;
    /** The fields the message names, each with its rule. */
    fields: FieldProblem[];
  };
}

export function errorBody(code: string, message: string): ErrorBody {
  return { error: { code, message, fields: fieldProblems(message) } };
}

/** The gRPC status's name: status[3] is "INVALID_ARGUMENT". */
export function statusName(code: status): string {
  return status[code] ?? "UNKNOWN";
}
