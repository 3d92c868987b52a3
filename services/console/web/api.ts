/**
 * The console's API from the page: gRPC methods as `POST /api/<Service>/<Method>` with proto3
 * JSON, sign-in and sessions. The session cookie is HttpOnly; the page holds only the session's
 * CSRF token, in memory, and sends it with every request that changes anything.
 */

import type * as json from "@switchyard/contracts/json";
import type { CallFilter, FieldCondition } from "./call-filter-draft";

/** One field an error names, as the service spelled its path, with the rule it broke. */
export interface FieldProblem {
  field: string;
  message: string;
}

/** A refused request: the HTTP status, the gRPC status name, the message and the fields it names. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly fields: FieldProblem[] = [],
  ) {
    super(message);
  }
}

export interface SessionInfo {
  csrfToken: string;
  expiresAt: string;
}

let csrfToken: string | undefined;
const signedOutListeners = new Set<() => void>();

/** Called whenever the console answers 401: the session ended (expired, or signed out elsewhere). */
export function onSignedOut(listener: () => void): () => void {
  signedOutListeners.add(listener);
  return () => signedOutListeners.delete(listener);
}

async function request<T>(method: string, path: string, body?: unknown): Promise<T> {
  const headers: Record<string, string> = { Accept: "application/json" };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  if (method !== "GET" && csrfToken) headers["X-CSRF-Token"] = csrfToken;
  let response: Response;
  try {
    response = await fetch(path, {
      method,
      headers,
      credentials: "same-origin",
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch {
    throw new ApiError(0, "UNAVAILABLE", "the console cannot be reached; check the connection and try again");
  }
  if (response.status === 204) return undefined as T;
  const text = await response.text();
  let json: unknown;
  try {
    json = text === "" ? {} : JSON.parse(text);
  } catch {
    throw new ApiError(response.status, "UNKNOWN", `unexpected answer (${response.status})`);
  }
  if (!response.ok) {
    const error = (json as { error?: { code?: string; message?: string; fields?: FieldProblem[] } }).error ?? {};
    // A refused sign-in is not a session ending; every other 401 is.
    if (response.status === 401 && !(method === "POST" && path === "/api/session")) {
      csrfToken = undefined;
      for (const listener of signedOutListeners) listener();
    }
    throw new ApiError(
      response.status,
      error.code ?? "UNKNOWN",
      error.message ?? `request failed (${response.status})`,
      error.fields ?? [],
    );
  }
  return json as T;
}

/**
 * Calls a gRPC method, e.g. rpc(Config("ListSources")): the method is one of the generated
 * unary methods, and the request and the answer are its generated proto3 JSON shapes. Naming the
 * answer's type, rpc<{ sources?: Source[] }>(...), reads it as that (which must be one of the
 * methods' answers), e.g. with the fields the services always fill marked present.
 */
export function rpc<Response extends json.JsonResponse<Name>, Name extends json.UnaryJsonMethod = json.UnaryJsonMethod>(
  method: Name,
  body?: json.JsonRequest<Name>,
): Promise<Response> {
  return request<Response>("POST", `/api/${method}`, body ?? {});
}

/** The current session, or undefined when signed out. */
export async function currentSession(): Promise<SessionInfo | undefined> {
  try {
    const session = await request<SessionInfo>("GET", "/api/session");
    csrfToken = session.csrfToken;
    return session;
  } catch (error) {
    if (error instanceof ApiError && error.status === 401) return undefined;
    throw error;
  }
}

export async function signIn(secret: string): Promise<SessionInfo> {
  const session = await request<SessionInfo>("POST", "/api/session", { secret });
  csrfToken = session.csrfToken;
  return session;
}

export async function signOut(): Promise<void> {
  await request<void>("DELETE", "/api/session").catch(() => undefined);
  csrfToken = undefined;
}

// The methods the pages use, by service: full names, so rpc() knows each one's request and answer.
export const Config = <Method extends string>(method: Method) => `switchyard.v1.ConfigService/${method}` as const;
export const Delivery = <Method extends string>(method: Method) => `switchyard.v1.DeliveryService/${method}` as const;
export const Audience = <Method extends string>(method: Method) => `switchyard.v1.AudienceService/${method}` as const;
export const Insights = <Method extends string>(method: Method) => `switchyard.v1.InsightsService/${method}` as const;

/**
 * A generated message with the fields `K` present. Proto3 JSON leaves out empty fields, so the
 * generated shapes mark every field optional; these are the ones the services always fill (ids,
 * URLs, keys), which the pages use as such.
 */
type Filled<T, K extends keyof T> = Omit<T, K> & { [P in K]-?: Exclude<T[P], undefined> };

// The messages the pages read: the generated proto3 JSON shapes (types only: nothing generated
// is bundled), with the fields the services always fill marked present.
export type Source = Filled<json.Source, "id">;
export type BlockedCalls = json.BlockedCalls;
export type WebhookEntry = Filled<json.WebhookEntry, "url">;
export type Destination = Filled<
  Omit<json.Destination, "webhooks" | "webhooksKind"> & { webhooks?: WebhookEntry[]; webhooksKind?: { webhooks?: WebhookEntry[] } },
  "id"
>;
/** A Webhooks (Actions) mapping: its URL and header values are text or mapping-kit directives (JSON). */
export type ActionMapping = json.ActionMapping;
export type TestActionMappingResponse = json.TestActionMappingResponse;
export type { CallFilter, FieldCondition };
/** Its filter as the destination form reads it: exactly one of all, any, not, field. */
export type Connection = Filled<Omit<json.Connection, "filter"> & { filter?: CallFilter }, "sourceId" | "destinationId">;
export type DeliveryAttempt = json.DeliveryAttempt;
export type HttpHeader = json.HttpHeader;
export type AttemptExchange = json.AttemptExchange;
export type DeadLetterEntry = Filled<json.DeadLetterEntry, "sequence">;
export type AudienceState = Filled<json.AudienceState, "sourceId" | "kind">;
export type SchemaEntry = Filled<Omit<json.SchemaEntry, "keys"> & { keys?: Filled<json.SchemaKey, "key">[] }, "type">;
export type SourceSchema = Omit<json.GetSourceSchemaResponse, "entries"> & { entries?: SchemaEntry[] };
export type SourceUsage = Filled<
  Omit<json.SourceUsage, "destinations"> & { destinations?: Filled<json.DestinationUsage, "destinationId">[] },
  "sourceId" | "day"
>;
