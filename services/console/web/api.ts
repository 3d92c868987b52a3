/**
 * The console's API from the page: gRPC methods as `POST /api/<Service>/<Method>` with proto3
 * JSON, sign-in and sessions. The session cookie is HttpOnly; the page holds only the session's
 * CSRF token, in memory, and sends it with every request that changes anything.
 */

import type { CallFilter } from "./call-filter-draft";

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

/** Calls a gRPC method, e.g. rpc("switchyard.v1.ConfigService/ListSources"). */
export function rpc<T>(method: string, body: object = {}): Promise<T> {
  return request<T>("POST", `/api/${method}`, body);
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

// The methods the pages use, by service.
export const Config = (method: string) => `switchyard.v1.ConfigService/${method}`;
export const Delivery = (method: string) => `switchyard.v1.DeliveryService/${method}`;
export const Audience = (method: string) => `switchyard.v1.AudienceService/${method}`;
export const Insights = (method: string) => `switchyard.v1.InsightsService/${method}`;

// Proto3 JSON shapes of the messages the pages read (fields absent when empty, as proto3 JSON has it).
export interface Source {
  id: string;
  name?: string;
  writeKeyCount?: number;
  retiringWriteKeyCount?: number;
  retiringWriteKeysExpireAt?: string;
  allowedOrigins?: { origins?: string[] };
  blocked?: BlockedCalls;
}

/** What a source blocks: call types, and track events by name. */
export interface BlockedCalls {
  types?: string[];
  trackEvents?: string[];
}

export interface WebhookEntry {
  url: string;
  headers?: Record<string, string>;
}

export interface Destination {
  id: string;
  name?: string;
  enabled?: boolean;
  webhooks?: WebhookEntry[];
  sharedSecret?: string;
  standardWebhooks?: { signingSecret?: string; retiringSecretsExpireAt?: string[] };
  maxRequestsPerSecond?: number;
}

export type { CallFilter, FieldCondition } from "./call-filter-draft";

export interface Connection {
  sourceId: string;
  destinationId: string;
  filter?: CallFilter;
}

export interface DeliveryAttempt {
  destinationId?: string;
  messageId?: string;
  url?: string;
  status?: number;
  error?: string;
  latencyMs?: number;
  attempt?: number;
  at?: string;
  outcome?: string;
  sourceId?: string;
  attemptId?: string;
  exchange?: AttemptExchange;
}

export interface HttpHeader {
  name?: string;
  value?: string;
}

/** What one attempt sent and got back; bodies are base64, as proto3 JSON gives bytes. */
export interface AttemptExchange {
  method?: string;
  url?: string;
  requestHeaders?: HttpHeader[];
  requestBody?: string;
  responseHeaders?: HttpHeader[];
  responseBody?: string;
  responseBodyTruncated?: boolean;
}

export interface DeadLetterEntry {
  sequence: number | string;
  deadLetter?: {
    task?: { call?: Record<string, unknown>; sourceId?: string; destinationId?: string };
    reason?: string;
    lastAttempt?: DeliveryAttempt;
    deadAt?: string;
    attempts?: number;
  };
}

export interface AudienceState {
  sourceId: string;
  kind: string;
  name?: string;
  trait?: string;
  total?: number | string;
  lastSync?: { syncId?: string; mode?: string; emitted?: number | string; appliedAt?: string };
}

export interface SchemaEntry {
  type: string;
  name?: string;
  overflow?: boolean;
  count24h?: number | string;
  count7d?: number | string;
  countTotal?: number | string;
  filteredTotal?: number | string;
  firstSeen?: string;
  lastSeen?: string;
  keys?: { key: string; types?: string[] }[];
  blocked?: boolean;
}

export interface SourceSchema {
  sourceId?: string;
  entries?: SchemaEntry[];
  nameLimit?: number;
  updatedAt?: string;
}

export interface SourceUsage {
  sourceId: string;
  day: string;
  accepted?: number | string;
  filtered?: number | string;
  rejected?: number | string;
  destinations?: {
    destinationId: string;
    delivered?: number | string;
    filtered?: number | string;
    failed?: number | string;
    deadLettered?: number | string;
  }[];
}
