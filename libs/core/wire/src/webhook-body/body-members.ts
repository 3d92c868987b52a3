import type { PayloadCase } from "../call-shape.js";

/**
 * What a body shows of each payload after version and type (docs/contract.md §6.3): a payload
 * field named by its property name, with the JSON name it gets ("Previous ID") when that differs,
 * or the call's userId. Which members a body has is the contract's choice, so a field added to a
 * payload shows only once it is listed here; its number, text or Struct kind come from
 * PAYLOAD_SHAPES. The body writer (webhook-body-writer.ts) writes these, and a filter's paths
 * (call-fields.ts) find what they show. A payload's Struct the body does not show is still
 * walked by the writer (see its BODY_PLANS).
 */
export type BodyMember =
  | { readonly text: string; readonly name?: string; readonly onlyWhenSet?: true }
  | { readonly object: string }
  | { readonly userId: "when set" | "always"; readonly name?: string };
const USER_ID_WHEN_SET: BodyMember = { userId: "when set" };
export const BODY_MEMBERS: { readonly [T in PayloadCase]: readonly BodyMember[] } = {
  page: [USER_ID_WHEN_SET, { text: "name", onlyWhenSet: true }, { text: "category", onlyWhenSet: true }, { object: "properties" }],
  screen: [USER_ID_WHEN_SET, { text: "name" }],
  identify: [USER_ID_WHEN_SET, { object: "traits" }],
  track: [USER_ID_WHEN_SET, { text: "event" }, { object: "properties" }],
  alias: [
    { text: "previousId", name: "Previous ID" },
    { userId: "always", name: "User ID" },
  ],
  group: [{ text: "groupId" }, USER_ID_WHEN_SET, { object: "traits" }],
  delete: [USER_ID_WHEN_SET],
};
