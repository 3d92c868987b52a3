import type { Call } from "@switchyard/contracts";

/** A forwarded JSON body, as docs/contract.md §6.3-6.4 defines it. */
export type WebhookBody = Record<string, unknown>;

/**
 * The body a webhook receives for a call. Field order follows docs/contract.md §6.3;
 * every body also carries messageId, and anonymousId and context when the
 * call had them. Nothing else. Listed object fields (properties, traits) are
 * always present, empty when the call had none, so receivers can rely on them.
 *
 * First attempts write the same bodies straight from a batch's bytes
 * (wire/webhook-body-writer.ts): a change here must be made there too (the
 * property tests in outgoing-calls.test.ts compare the two).
 */
export function webhookBody(call: Call): WebhookBody {
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
