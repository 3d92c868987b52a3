import type { Call } from "@switchyard/contracts";

/** A forwarded JSON body, as the spec's table 2.3 and decisions point 5 define it. */
export type WebhookBody = Record<string, unknown>;

/**
 * The body a webhook receives for a call. Field order follows table 2.3;
 * every body also carries messageId, and anonymousId and context when the
 * call had them. Nothing else. Listed object fields (properties, traits) are
 * always present, empty when the call had none, so receivers can rely on them.
 */
export function webhookBody(call: Call): WebhookBody {
  const payload = call.payload;
  if (!payload) throw new Error(`call ${call.messageId} has no payload`);
  const timestamp = (call.timestamp ?? call.receivedAt ?? new Date()).toISOString();
  const userId = call.userId === "" ? {} : { userId: call.userId };
  let body: WebhookBody;
  switch (payload.$case) {
    case "page":
      body = {
        version: 1,
        type: "page",
        ...userId,
        ...(payload.value.name ? { name: payload.value.name } : {}),
        ...(payload.value.category ? { category: payload.value.category } : {}),
        properties: payload.value.properties ?? {},
        timestamp,
      };
      break;
    case "screen":
      // Table 2.3 lists no properties for screen; its context (device, os, app) is what matters.
      body = { version: 1, type: "screen", ...userId, name: payload.value.name, timestamp };
      break;
    case "identify":
      body = { version: 1, type: "identify", ...userId, traits: payload.value.traits ?? {}, timestamp };
      break;
    case "track":
      body = { version: 1, type: "track", ...userId, event: payload.value.event, properties: payload.value.properties ?? {}, timestamp };
      break;
    case "alias":
      body = { version: 1, type: "alias", "Previous ID": payload.value.previousId, "User ID": call.userId, timestamp };
      break;
    case "group":
      body = { version: 1, type: "group", groupId: payload.value.groupId, ...userId, traits: payload.value.traits ?? {}, timestamp };
      break;
    case "delete":
      body = { type: "delete", ...userId, timestamp };
      break;
  }
  body.messageId = call.messageId;
  if (call.anonymousId !== "") body.anonymousId = call.anonymousId;
  if (call.context) body.context = call.context;
  return body;
}
