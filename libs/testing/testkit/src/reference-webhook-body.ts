import type { Call } from "@switchyard/contracts";

type WebhookBody = Record<string, unknown>;

/**
 * The test oracle for webhook bodies: the body of docs/contract.md §6.3 built
 * from a decoded call the obvious way, an object serialised by JSON.stringify.
 * Services never use it: libs/core/wire's body writer is the one definition, and
 * property tests hold it equal to this (so a change to the body is made in
 * both: the writer, and this statement of what it must write).
 */
export function referenceWebhookBody(call: Call): WebhookBody {
  const payload = call.payload;
  if (!payload) throw new Error(`call ${call.messageId} has no payload`);
  const timestamp = (call.timestamp ?? call.receivedAt ?? new Date()).toISOString();
  // Members are set in §6.3's order (JSON keeps insertion order); no spreads, since this runs per request.
  const body: WebhookBody = payload.$case === "delete" ? {} : { version: 1 };
  body.type = payload.$case;
  switch (payload.$case) {
    case "page":
      setUserId(body, call);
      if (payload.value.name) body.name = payload.value.name;
      if (payload.value.category) body.category = payload.value.category;
      body.properties = payload.value.properties ?? {};
      break;
    case "screen":
      // §6.3 lists no properties for screen; its context (device, os, app) is what matters.
      setUserId(body, call);
      body.name = payload.value.name;
      break;
    case "identify":
      setUserId(body, call);
      body.traits = payload.value.traits ?? {};
      break;
    case "track":
      setUserId(body, call);
      body.event = payload.value.event;
      body.properties = payload.value.properties ?? {};
      break;
    case "alias":
      body["Previous ID"] = payload.value.previousId;
      body["User ID"] = call.userId;
      break;
    case "group":
      body.groupId = payload.value.groupId;
      setUserId(body, call);
      body.traits = payload.value.traits ?? {};
      break;
    case "delete":
      setUserId(body, call);
      break;
  }
  body.timestamp = timestamp;
  body.messageId = call.messageId;
  if (call.anonymousId !== "") body.anonymousId = call.anonymousId;
  if (call.context) body.context = call.context;
  return body;
}

function setUserId(body: WebhookBody, call: Call): void {
  if (call.userId !== "") body.userId = call.userId;
}
