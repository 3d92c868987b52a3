import type { Call } from "@switchyard/contracts";

/** The smallest valid call as a client sends it over gRPC: a "Signed Up" track of user-1, nothing for ingest to keep. */
export function signedUpCall(messageId: string): Call {
  return {
    messageId,
    userId: "user-1",
    anonymousId: "",
    timestamp: undefined,
    context: undefined,
    integrations: undefined,
    receivedAt: undefined,
    payload: { $case: "track", value: { event: "Signed Up", properties: undefined } },
  };
}
