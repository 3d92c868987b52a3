import { describe, expect, it } from "vitest";
import { busNames } from "./bus-names.js";
import {
  BUS_MESSAGE_TYPE_HEADER,
  BUS_MESSAGE_TYPE_NAMES,
  NATS_MSG_ID_HEADER,
  POISON_HEADERS,
  RETRY_HEADERS,
  busMessageHeaders,
} from "./headers.js";

// Subscribers' tooling reads these names (docs/subjects.md): they are public surface and must not change.
describe("names on the bus", () => {
  it("keeps the documented header and payload type names", () => {
    expect([NATS_MSG_ID_HEADER, BUS_MESSAGE_TYPE_HEADER]).toEqual(["Nats-Msg-Id", "Switchyard-Type"]);
    expect(Object.values(BUS_MESSAGE_TYPE_NAMES)).toEqual([
      "switchyard.v1.CallBatch",
      "switchyard.v1.DeliveryTask",
      "switchyard.v1.DeferredCalls",
      "switchyard.v1.DeadLetter",
      "switchyard.v1.DeliveryAttempt",
      "switchyard.v1.DeliveryAttempts",
      "switchyard.v1.RejectedCalls",
      "switchyard.v1.DeliveryOutcomes",
    ]);
    expect(Object.values(RETRY_HEADERS)).toEqual(["Switchyard-Destination", "Switchyard-Not-Before", "Switchyard-Window-Start"]);
    expect(Object.values(POISON_HEADERS).every((name) => name.startsWith("Switchyard-Poison-"))).toBe(true);
    expect(busMessageHeaders(BUS_MESSAGE_TYPE_NAMES.deadLetter).get("Switchyard-Type")).toBe("switchyard.v1.DeadLetter");
  });

  it("keeps the documented stream, subject and bucket names", () => {
    const names = busNames("switchyard");
    expect([names.callsStream, names.retryStream, names.deadStream, names.poisonStream, names.deliveryLogStream]).toEqual([
      "SWITCHYARD_CALLS",
      "SWITCHYARD_RETRY",
      "SWITCHYARD_DEAD",
      "SWITCHYARD_POISON",
      "SWITCHYARD_DELIVERY_LOG",
    ]);
    expect([names.deliveredLogStream, names.deliveredLogSubject("hook")]).toEqual([
      "SWITCHYARD_DELIVERED_LOG",
      "switchyard.deliveredlog.hook",
    ]);
    expect([names.callsSubject("web"), names.retrySubject("hook"), names.poisonSubject("retry")]).toEqual([
      "switchyard.calls.web",
      "switchyard.retry.hook",
      "switchyard.poison.retry",
    ]);
    expect([
      names.configBucket,
      names.deliveryStatsBucket,
      names.rateLimitBucket,
      names.audienceStateBucket,
      names.audienceStateObjects,
    ]).toEqual([
      "switchyard_config",
      "switchyard_delivery_stats",
      "switchyard_rate_limits",
      "switchyard_audience_state",
      "switchyard_audience_members",
    ]);
  });
});
