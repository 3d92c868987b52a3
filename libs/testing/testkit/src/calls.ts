import { Call } from "@switchyard/contracts";

/** What makeCall takes: any of a Call's fields, nested messages in part. */
export type CallFields = Parameters<typeof Call.fromPartial>[0];

/**
 * A whole Call, every field at its default unless given: a "Signed Up" track of user-1 with
 * message id "m-1". The one factory tests build calls with, so a field added to calls.proto needs
 * no test to change.
 */
export function makeCall(fields: CallFields = {}): Call {
  return Call.fromPartial({
    messageId: "m-1",
    userId: "user-1",
    payload: { $case: "track", value: { event: "Signed Up" } },
    ...fields,
  });
}

/** The smallest valid call as a client sends it over gRPC: a "Signed Up" track of user-1, nothing for ingest to keep. */
export function signedUpCall(messageId: string): Call {
  return makeCall({ messageId });
}
