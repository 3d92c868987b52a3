import {
  ServerInterceptingCall,
  status as GrpcStatus,
  type ServerInterceptingCallInterface,
  type ServerInterceptor,
  type ServiceDefinition,
} from "@grpc/grpc-js";
import { adminAuthFailure } from "./admin-auth.js";
import { ChildCache, Counter, Histogram, METRIC_PREFIX, type Registry } from "./ops/metrics.js";

/** What the server does around every call of one method, decided once at start-up. */
interface MethodPolicy {
  /** Check the admin bearer token before the handler sees anything. */
  admin: boolean;
  /** Count the call by its final status and time it; absent: no metrics for this method. */
  record?: (code: GrpcStatus, seconds: number) => void;
}

/** What a registration tells the interceptor about its service. */
export interface InterceptedService {
  name: string;
  definition: ServiceDefinition;
  admin: boolean;
  metrics: boolean;
}

/** Counter of finished gRPC calls, labelled service, method and code (the status name). */
export const GRPC_HANDLED_METRIC = `${METRIC_PREFIX}grpc_server_handled_total`;
/** Histogram of the time from a gRPC call's arrival to its status, labelled service and method. */
export const GRPC_HANDLING_SECONDS_METRIC = `${METRIC_PREFIX}grpc_server_handling_seconds`;

/**
 * The one server interceptor: admin authentication and per-method metrics for
 * the methods that ask for them. Undefined when no method does, so that a
 * server without them (ingest) keeps grpc-js's plain call path. Every other
 * method (health, reflection, exempt services) costs one map lookup per call.
 */
export function callInterceptor(options: {
  services: InterceptedService[];
  adminToken: string | undefined;
  registry: Registry | undefined;
}): ServerInterceptor | undefined {
  const policies = new Map<string, MethodPolicy>();
  const metrics = options.registry ? grpcMetrics(options.registry) : undefined;
  for (const service of options.services) {
    const withMetrics = service.metrics && metrics !== undefined;
    if (!service.admin && !withMetrics) continue;
    for (const method of Object.values(service.definition)) {
      const methodName = method.path.slice(method.path.lastIndexOf("/") + 1);
      policies.set(method.path, {
        admin: service.admin,
        ...(withMetrics ? { record: metrics.recorder(service.name, methodName) } : {}),
      });
    }
  }
  if (policies.size === 0) return undefined;

  return (method, call) => {
    const policy = policies.get(method.path);
    // grpc-js chains whatever an interceptor returns; handing the call on untouched adds nothing to it.
    if (!policy) return call as ServerInterceptingCall;
    return interceptedCall(call, policy, options.adminToken);
  };
}

function interceptedCall(
  call: ServerInterceptingCallInterface,
  policy: MethodPolicy,
  adminToken: string | undefined,
): ServerInterceptingCall {
  const started = performance.now();
  let finished = false;
  // Once per call: a cancelled call may still see its handler's late status.
  const finish = (code: GrpcStatus) => {
    if (finished) return;
    finished = true;
    policy.record?.(code, (performance.now() - started) / 1000);
  };
  return new ServerInterceptingCall(call, {
    start: (next) =>
      next({
        onReceiveMetadata: (metadata, nextMetadata) => {
          const failure = policy.admin ? adminAuthFailure(adminToken, metadata) : undefined;
          if (failure === undefined) return nextMetadata(metadata);
          // Not passed on: the handler never runs for a call that is refused here.
          finish(GrpcStatus.UNAUTHENTICATED);
          call.sendStatus({ code: GrpcStatus.UNAUTHENTICATED, details: failure });
        },
        onCancel: () => finish(GrpcStatus.CANCELLED),
      }),
    sendStatus: (status, next) => {
      finish(status.code);
      next(status);
    },
  });
}

/** The two gRPC server metrics on `registry` (made once per registry), with children bound per method. */
function grpcMetrics(registry: Registry): { recorder(service: string, method: string): (code: GrpcStatus, seconds: number) => void } {
  const handled =
    (registry.getSingleMetric(GRPC_HANDLED_METRIC) as Counter<"service" | "method" | "code"> | undefined) ??
    new Counter({
      name: GRPC_HANDLED_METRIC,
      help: "gRPC calls finished, by service, method and status code (OK, INVALID_ARGUMENT, UNAUTHENTICATED, ...)",
      labelNames: ["service", "method", "code"],
      registers: [registry],
    });
  const seconds =
    (registry.getSingleMetric(GRPC_HANDLING_SECONDS_METRIC) as Histogram<"service" | "method"> | undefined) ??
    new Histogram({
      name: GRPC_HANDLING_SECONDS_METRIC,
      help: "Time from a gRPC call's arrival to its status, by service and method",
      labelNames: ["service", "method"],
      registers: [registry],
    });
  return {
    recorder: (service, method) => {
      const byCode = new ChildCache((code) => handled.labels(service, method, code));
      const timer = seconds.labels(service, method);
      return (code, elapsed) => {
        byCode.get(GrpcStatus[code] ?? String(code)).inc();
        timer.observe(elapsed);
      };
    },
  };
}
