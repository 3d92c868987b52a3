import { HTTP_HEADER_NAME, HTTP_HEADER_VALUE } from "@switchyard/calls";
import { ACTION_METHODS } from "./limits.js";
import { Mapping, mappingProblems, type JsonObject, type JsonValue } from "./mapping.js";

/*
 * The request one mapping of a Webhooks (Actions) destination makes of a call, as Segment's
 * webhook action makes it: the URL, the headers and the data are all mapped from the call
 * (each is a literal or a mapping-kit directive), the method is fixed per mapping. The body
 * of one call is its data's JSON (none when the data maps to nothing); a batch's is the array
 * of its calls' data. What the mapping makes must be a request HTTP can carry: an http(s) URL,
 * header names that are HTTP tokens and values of visible ASCII; a call for which it is not
 * fails for good, with the reason.
 */

export type ActionMethod = (typeof ACTION_METHODS)[number];

/** What the whole call is, as Segment's webhook action maps it by default. */
export const DEFAULT_DATA: JsonObject = { "@path": "$." };

/** A mapping's request fields, as saved. */
export interface ActionFields {
  /** A URL, or a directive that makes one from the call (`{"@template": "https://x.example/{{userId}}"}`). */
  readonly url: JsonValue;
  readonly method: string;
  /** Header names to values, each a literal or a directive. */
  readonly headers?: JsonObject | undefined;
  /** What the body holds; the whole call when absent. */
  readonly data?: JsonObject | undefined;
}

/** One call's request, as the mapping made it. */
export interface MappedRequest {
  readonly url: string;
  readonly method: ActionMethod;
  /** [name, value, …], in the mapping's order. */
  readonly headers: readonly string[];
  /** The call's data; undefined when the mapping made nothing of it. */
  readonly data: JsonValue | undefined;
  /** Calls batch together when their key is equal: the same URL, method and headers, as Segment groups them. */
  readonly batchKey: string;
}

/** A request the mapping made, or why this call cannot be sent (for good: the same call maps the same way). */
export type MappedRequestResult = { ok: true; request: MappedRequest } | { ok: false; reason: string };

/** The request fields of one mapping, checked, ready to make requests of calls. */
export class ActionRequestMapping {
  private constructor(
    private readonly method: ActionMethod,
    private readonly mapping: Mapping,
  ) {}

  /** The mapping, or its problems, each naming its field (`url`, `method`, `headers`, `data`) and place. */
  static compile(fields: ActionFields): ActionRequestMapping | string[] {
    const problems: string[] = [];
    if (!(ACTION_METHODS as readonly string[]).includes(fields.method))
      problems.push(`method: must be one of ${ACTION_METHODS.join(", ")}`);
    if (typeof fields.url === "string") {
      const reason = urlProblem(fields.url);
      if (reason) problems.push(`url: ${reason}`);
    } else if (typeof fields.url !== "object" || fields.url === null || Array.isArray(fields.url)) {
      problems.push("url: must be a URL or a mapping directive that makes one");
    } else problems.push(...mappingProblems({ url: fields.url }).map((problem) => `url: ${problem.replace(/^\/url\/?/, "/")}`));
    if (fields.headers !== undefined) {
      for (const name of Object.keys(fields.headers))
        if (!HTTP_HEADER_NAME.test(name)) problems.push(`headers.${name}: is not an HTTP header name`);
      problems.push(...mappingProblems(fields.headers).map((problem) => `headers: ${problem}`));
    }
    if (fields.data !== undefined) problems.push(...mappingProblems(fields.data).map((problem) => `data: ${problem}`));
    if (problems.length > 0) return problems;
    const json: JsonObject = { url: fields.url, headers: fields.headers ?? {}, data: fields.data ?? DEFAULT_DATA };
    return new ActionRequestMapping(fields.method as ActionMethod, new Mapping(json));
  }

  /** The request this mapping makes of an event (a call in Segment's event shape, see callEvent). */
  request(event: JsonObject): MappedRequestResult {
    const mapped = this.mapping.apply(event);
    if (!mapped.ok) return { ok: false, reason: `the mapping could not be applied: ${mapped.error}` };
    const { url, headers, data } = mapped.value;
    if (typeof url !== "string") return { ok: false, reason: `url: the mapping made ${describe(url)}, not a URL` };
    const urlReason = urlProblem(url);
    if (urlReason) return { ok: false, reason: `url: ${JSON.stringify(url)} ${urlReason}` };
    const list: string[] = [];
    if (headers !== undefined) {
      if (typeof headers !== "object" || headers === null || Array.isArray(headers)) {
        return { ok: false, reason: `headers: the mapping made ${describe(headers)}, not an object of header values` };
      }
      for (const [name, value] of Object.entries(headers)) {
        if (value === undefined) continue;
        if (!HTTP_HEADER_NAME.test(name)) return { ok: false, reason: `headers.${name}: is not an HTTP header name` };
        if (typeof value !== "string") return { ok: false, reason: `headers.${name}: the mapping made ${describe(value)}, not text` };
        if (!HTTP_HEADER_VALUE.test(value))
          return { ok: false, reason: `headers.${name}: holds characters a header cannot carry (ASCII only, no line breaks)` };
        list.push(name, value);
      }
    }
    const batchKey = JSON.stringify([url, this.method, list]);
    return { ok: true, request: { url, method: this.method, headers: list, data, batchKey } };
  }
}

/** Why a text is not an absolute http(s) URL; undefined when it is one. */
function urlProblem(text: string): string | undefined {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return "is not an absolute URL";
  }
  if (url.protocol !== "http:" && url.protocol !== "https:")
    return `is a ${url.protocol.slice(0, -1)} URL: only http and https are sent to`;
  return undefined;
}

function describe(value: JsonValue | undefined): string {
  if (value === undefined) return "nothing";
  if (value === null) return "null";
  if (Array.isArray(value)) return "a list";
  return typeof value === "object" ? "an object" : `a ${typeof value}`;
}

/** The body of one call's request: its data's JSON, or none when the mapping made nothing. */
export function singleBody(request: MappedRequest): Buffer {
  return request.data === undefined ? Buffer.alloc(0) : Buffer.from(JSON.stringify(request.data));
}

/** The body of a batch: the array of its calls' data (a call whose data is nothing is null there, as JSON writes it). */
export function batchBody(requests: readonly MappedRequest[]): Buffer {
  return Buffer.from(JSON.stringify(requests.map((request) => request.data ?? null)));
}
