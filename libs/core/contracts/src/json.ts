/**
 * The services' messages in proto3 JSON, as the generated toJSON writes them and fromJSON reads
 * them: what the console's API and `switchyard call` take and answer. Types only (generated into
 * gen/json, which holds no runtime code anyone uses), so code that must not load the runtime,
 * such as the console's browser bundle, imports them with `import type`.
 */
import type { AudienceService, DeletionService } from "./gen/json/switchyard/v1/audiences.js";
import type { ConfigService } from "./gen/json/switchyard/v1/config.js";
import type { DeliveryService } from "./gen/json/switchyard/v1/delivery.js";
import type { IngestService } from "./gen/json/switchyard/v1/ingest.js";
import type { InsightsService } from "./gen/json/switchyard/v1/insights.js";

export type * from "./gen/json/switchyard/v1/audiences.js";
export type * from "./gen/json/switchyard/v1/calls.js";
export type * from "./gen/json/switchyard/v1/config.js";
export type * from "./gen/json/switchyard/v1/delivery.js";
export type * from "./gen/json/switchyard/v1/ingest.js";
export type * from "./gen/json/switchyard/v1/insights.js";

/** A service's methods by full name (`switchyard.v1.ConfigService/ListSources`), each with its request and response. */
type MethodsOf<Service extends string, Methods> = {
  [Name in keyof Methods & string as `${Service}/${Name}`]: Methods[Name] extends (request: infer Request) => Promise<infer Response>
    ? { request: Request; response: Response }
    : never;
};

/** Every method of the Switchyard services, by full name. */
export type JsonMethods = MethodsOf<"switchyard.v1.IngestService", IngestService> &
  MethodsOf<"switchyard.v1.ConfigService", ConfigService> &
  MethodsOf<"switchyard.v1.DeliveryService", DeliveryService> &
  MethodsOf<"switchyard.v1.AudienceService", AudienceService> &
  MethodsOf<"switchyard.v1.DeletionService", DeletionService> &
  MethodsOf<"switchyard.v1.InsightsService", InsightsService>;

/** The methods one JSON request calls: the unary ones (a client stream's request is many messages). */
export type UnaryJsonMethod = {
  [Name in keyof JsonMethods]: JsonMethods[Name]["request"] extends AsyncIterable<unknown> ? never : Name;
}[keyof JsonMethods];

/** A method's request and response in proto3 JSON. */
export type JsonRequest<Name extends keyof JsonMethods> = JsonMethods[Name]["request"];
export type JsonResponse<Name extends keyof JsonMethods> = JsonMethods[Name]["response"];
