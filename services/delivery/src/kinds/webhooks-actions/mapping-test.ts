import { randomUUID } from "node:crypto";
import { checkCall, validCallToProto } from "@switchyard/calls";
import { actionMappingRecord } from "@switchyard/config-service";
import type { configApi, deliveryApi } from "@switchyard/contracts";
import { batchBody, callEvent, compileActionMappings, singleBody } from "@switchyard/mappings";
import { ServiceError } from "@switchyard/platform";
import { exchangeOf } from "@switchyard/wire";
import { describeIssues, destinationSchema, type Masker, type WorkspaceView } from "@switchyard/workspace";
import type { Sender } from "../../outbound/webhook-sender.js";
import { maskedRequest, requestHeaders } from "./request-headers.js";

/** What a mapping test needs of delivery. */
export interface MappingTestDeps {
  readonly workspace: WorkspaceView;
  readonly sender: Sender;
  readonly masker: Masker;
}

const EMPTY: deliveryApi.TestActionMappingResponse = {
  problems: [],
  taken: false,
  reason: "",
  request: undefined,
  status: 0,
  error: "",
  latencyMs: 0,
};

/**
 * DeliveryService.TestActionMapping: the request one mapping makes of a call, checked by the same
 * rules as a stored destination's mappings and built as delivery builds it (a batching mapping's
 * as a batch of this one call), signed with the stored destination's secrets; with `send`, sent
 * once through the sender, so the address policy holds. Nothing is retried, logged or counted.
 */
export async function testActionMapping(
  deps: MappingTestDeps,
  request: deliveryApi.TestActionMappingRequest,
): Promise<deliveryApi.TestActionMappingResponse> {
  if (!request.mapping) throw new ServiceError("INVALID_ARGUMENT", "mapping: is required");
  const found = request.destinationId ? deps.workspace.destination(request.destinationId) : undefined;
  if (request.destinationId && found?.type !== "webhooks_actions")
    throw new ServiceError("NOT_FOUND", `destination_id: no Webhooks (Actions) destination "${request.destinationId}"`);
  const stored = found?.type === "webhooks_actions" ? found : undefined;
  const record = actionMappingRecord(request.mapping as configApi.ActionMapping, stored, deps.masker);

  // The rules a stored destination's mappings follow (the workspace's header policy included), named as in a test.
  const checked = destinationSchema.safeParse({
    id: stored?.id ?? "test",
    type: "webhooks_actions",
    settings: {
      mappings: [record],
      ...(stored ? { standardWebhooks: stored.settings.standardWebhooks } : {}),
    },
  });
  if (!checked.success) {
    return { ...EMPTY, problems: describeIssues(checked.error).map((problem) => problem.replace(/^settings\.mappings\.0\.?/, "mapping.")) };
  }
  const compiled = compileActionMappings([record]);
  if (!compiled.ok) return { ...EMPTY, problems: compiled.problems.map((problem) => problem.replace(/^mappings\.0\.?/, "mapping.")) };
  const [mapping] = compiled.mappings;

  const check = checkCall(request.call ?? {}, 0);
  if (!check.ok) return { ...EMPTY, problems: [`call.${check.rejection.message}`] };
  const messageId = check.call.messageId ?? `test-${randomUUID()}`;
  const event = callEvent(validCallToProto(check.call, { messageId, receivedAt: new Date() }));
  const taken = mapping!.trigger.matches(event);
  const made = mapping!.request(event);
  if (!made.ok) return { ...EMPTY, taken, reason: made.reason };

  const mapped = made.request;
  const body = mapping!.batching ? batchBody([mapped]) : singleBody(mapped);
  const headers = requestHeaders(mapped, body, stored?.settings, messageId);
  const logged = { method: mapped.method, entry: maskedRequest(mapped, headers, deps.masker), headers, body };
  if (!request.send) return { ...EMPTY, taken, request: exchangeOf({ status: 0, latencyMs: 0, request: logged }) };

  const result = await deps.sender.send(mapped.url, headers, body, stored?.id ?? "test", mapped.method);
  return {
    ...EMPTY,
    taken,
    request: exchangeOf({ ...result, request: logged }),
    status: result.status,
    error: result.error,
    latencyMs: result.latencyMs,
  };
}
