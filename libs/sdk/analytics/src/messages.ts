/**
 * The messages of the six calls, with the rules of docs/contract.md §2 and
 * camelCase field names (§11.1). Free-form objects may hold anything JSON can: values are sent
 * as JSON.stringify would write them (a Date becomes its ISO text, undefined
 * members are left out).
 */

import type { CallModelFields } from "./gen/call-fields.js";

/** A free-form JSON object: traits, properties, context. */
export type JsonObject = Record<string, unknown>;

/**
 * Destination switches: `{ All: false, Webhooks: true }`. Keys are destination
 * names (case-sensitive); a value is true, false or an object (counts as on).
 */
export type Integrations = Record<string, boolean | JsonObject>;

/**
 * Fields every call accepts: those below, and every other field of Call a client sets, from the
 * Call model (gen/call-fields.ts, generated from calls.proto; receivedAt is ingest's).
 */
export interface CommonFields extends Omit<CallModelFields, keyof DocumentedFields | "receivedAt">, DocumentedFields {}

/** The fields every call accepts that the client documents in its own words. */
interface DocumentedFields {
  /** The user's id in your database. This or `anonymousId` is required (alias: `userId` is required). */
  userId?: string;
  /** The id used while the user is unknown. */
  anonymousId?: string;
  /** When the call happened, for historical imports. Omit it for current events: ingest then uses its accept time. */
  timestamp?: Date | string;
  /** Extra context (device, ip, locale, ...). `context.library` is set by the client. */
  context?: JsonObject;
  /** Turns destinations on or off for this call. */
  integrations?: Integrations;
  /** Your own unique id for the call; one is generated (a UUID) when omitted. */
  messageId?: string;
}

export interface IdentifyMessage extends CommonFields {
  /** Traits of the user. */
  traits?: JsonObject;
}

export interface TrackMessage extends CommonFields {
  /** Event name. Required. */
  event: string;
  /** Free-form event properties. */
  properties?: JsonObject;
}

export interface PageMessage extends CommonFields {
  /** Name of the page. */
  name?: string;
  /** Category of the page. */
  category?: string;
  /** Page properties: url, title, referrer and path are recognised; custom keys allowed. */
  properties?: JsonObject;
}

/** A mobile screen view: like a page. */
export type ScreenMessage = PageMessage;

export interface GroupMessage extends CommonFields {
  /** Group id (company, organization, account, project, team). Required. */
  groupId: string;
  /** Traits of the group. */
  traits?: JsonObject;
}

export interface AliasMessage extends Omit<CommonFields, "userId" | "anonymousId"> {
  /** The new identity. Required. */
  userId: string;
  /** The identity to alias from. Required. */
  previousId: string;
  anonymousId?: string;
}

export type CallType = "identify" | "track" | "page" | "screen" | "group" | "alias";
