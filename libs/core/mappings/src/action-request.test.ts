import { describe, expect, it } from "vitest";
import { ActionRequestMapping, batchBody, singleBody, type ActionFields, type MappedRequest } from "./action-request.js";
import type { JsonObject } from "./mapping.js";

const ORDER: JsonObject = { type: "track", event: "Order Completed", userId: "u-1", properties: { total: 42, region: "eu" } };

function compiled(fields: ActionFields): ActionRequestMapping {
  const mapping = ActionRequestMapping.compile(fields);
  if (Array.isArray(mapping)) throw new Error(mapping.join("; "));
  return mapping;
}

function request(fields: ActionFields, event: JsonObject = ORDER): MappedRequest {
  const result = compiled(fields).request(event);
  if (!result.ok) throw new Error(result.reason);
  return result.request;
}

describe("ActionRequestMapping", () => {
  it("makes the whole call the body by default, with the method and headers given", () => {
    const made = request({ url: "https://hooks.example/orders", method: "PUT", headers: { "X-Team": "growth" } });
    expect(made).toMatchObject({ url: "https://hooks.example/orders", method: "PUT", headers: ["X-Team", "growth"], data: ORDER });
    expect(JSON.parse(singleBody(made).toString())).toEqual(ORDER);
  });

  it("maps the URL, the headers and the data from the call; equal ones batch together", () => {
    const fields: ActionFields = {
      url: { "@template": "https://{{properties.region}}.hooks.example/u/{{userId}}" },
      method: "POST",
      headers: { "X-Event": { "@path": "$.event" } },
      data: { id: { "@path": "$.userId" }, total: { "@path": "$.properties.total" }, missing: { "@path": "$.nope" } },
    };
    const one = request(fields);
    expect(one).toMatchObject({
      url: "https://eu.hooks.example/u/u-1",
      headers: ["X-Event", "Order Completed"],
      data: { id: "u-1", total: 42 },
    });
    const same = request(fields, { ...ORDER, properties: { total: 7, region: "eu" } });
    const other = request(fields, { ...ORDER, properties: { total: 7, region: "us" } });
    expect(same.batchKey).toBe(one.batchKey);
    expect(other.batchKey).not.toBe(one.batchKey);
    expect(JSON.parse(batchBody([one, same]).toString())).toEqual([
      { id: "u-1", total: 42 },
      { id: "u-1", total: 7 },
    ]);
  });

  it("sends no body when the data maps to nothing, and null for that call in a batch", () => {
    const made = request({ url: "https://hooks.example/", method: "POST", data: { "@path": "$.nope" } });
    expect(made.data).toBeUndefined();
    expect(singleBody(made)).toHaveLength(0);
    expect(batchBody([made]).toString()).toBe("[null]");
  });

  it("refuses a mapping when saved, naming the field and the place", () => {
    expect(
      ActionRequestMapping.compile({ url: "ftp://files.example/x", method: "GET", headers: { "X Bad": "v" }, data: { a: { "@path": 1 } } }),
    ).toEqual([
      "method: must be one of POST, PUT, PATCH",
      "url: is a ftp URL: only http and https are sent to",
      "headers.X Bad: is not an HTTP header name",
      "data: /a/@path should be a string or a mapping directive but it is a number",
    ]);
    expect(ActionRequestMapping.compile({ url: "not a url", method: "POST" })).toEqual(["url: is not an absolute URL"]);
    expect(ActionRequestMapping.compile({ url: { "@temp": "x" }, method: "POST" })).toEqual(["url: / has an invalid directive: @temp"]);
  });

  it("fails a call for good when what the mapping made of it is no request HTTP can carry", () => {
    const mapping = compiled({
      url: { "@path": "$.properties.hook" },
      method: "POST",
      headers: { "X-Note": { "@path": "$.properties.note" } },
    });
    const reason = (properties: JsonObject) => {
      const result = mapping.request({ ...ORDER, properties });
      return result.ok ? "sent" : result.reason;
    };
    expect(reason({ hook: "https://ok.example/" })).toBe("sent");
    expect(reason({})).toBe("url: the mapping made nothing, not a URL");
    expect(reason({ hook: "javascript:alert(1)" })).toBe('url: "javascript:alert(1)" is a javascript URL: only http and https are sent to');
    expect(reason({ hook: "https://ok.example/", note: "two\r\nlines" })).toBe(
      "headers.X-Note: holds characters a header cannot carry (ASCII only, no line breaks)",
    );
    expect(reason({ hook: "https://ok.example/", note: 5 })).toBe("headers.X-Note: the mapping made a number, not text");
  });
});
