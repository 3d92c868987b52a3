import type { ActionMapping as ActionMappingJson } from "@switchyard/contracts/json";
import { ActionRequestMapping, type MappedRequestResult } from "./action-request.js";
import type { JsonObject, JsonValue } from "./mapping.js";
import {
  DEFAULT_BATCH_SIZE,
  DEFAULT_BATCH_WAIT_MS,
  MAX_ACTION_MAPPINGS,
  MAX_BATCH_SIZE,
  MAX_BATCH_WAIT_MS,
  MAX_MAPPING_NAME_CHARS,
  MIN_BATCH_WAIT_MS,
} from "./limits.js";
import { Trigger, TriggerError } from "./trigger.js";

/*
 * A Webhooks (Actions) destination's mappings (switchyard.v1.ActionMapping, in proto3 JSON as
 * the workspace file and the console give them), checked when saved and compiled once: every
 * problem names the mapping and the field (`mappings.1.trigger: ...`), and what is compiled is
 * what delivery applies to each call.
 */

/** One mapping, compiled. */
export interface CompiledActionMapping {
  readonly name: string;
  readonly enabled: boolean;
  readonly trigger: Trigger;
  /** Undefined: one request per call. */
  readonly batching: { readonly size: number; readonly maxWaitMs: number } | undefined;
  /** The request it makes of an event (a call in Segment's event shape). */
  request(event: JsonObject): MappedRequestResult;
}

/** A destination's mappings compiled, or every problem found. */
export type CompiledActionMappings =
  | { readonly ok: true; readonly mappings: CompiledActionMapping[] }
  /** Each problem names its place first: `mappings.<index>.<field>: <rule>`. */
  | { readonly ok: false; readonly problems: string[] };

/** The mappings compiled, or every problem found, each naming `mappings.<index>.<field>`. */
export function compileActionMappings(mappings: readonly ActionMappingJson[]): CompiledActionMappings {
  const problems: string[] = [];
  if (mappings.length < 1 || mappings.length > MAX_ACTION_MAPPINGS) {
    problems.push(`mappings: give 1 to ${MAX_ACTION_MAPPINGS} mappings, not ${mappings.length}`);
  }
  const names = new Set<string>();
  const compiled: CompiledActionMapping[] = [];
  mappings.forEach((mapping, index) => {
    const at = `mappings.${index}`;
    const name = mapping.name ?? "";
    if (name.trim() === "" || name.length > MAX_MAPPING_NAME_CHARS)
      problems.push(`${at}.name: must be 1-${MAX_MAPPING_NAME_CHARS} characters`);
    else if (names.has(name)) problems.push(`${at}.name: "${name}" is the name of an earlier mapping`);
    names.add(name);
    const trigger = Trigger.parse(mapping.trigger ?? "");
    if (trigger instanceof TriggerError) problems.push(`${at}.trigger: ${trigger.message}`);
    const request = ActionRequestMapping.compile({
      url: (mapping.url ?? "") as JsonValue,
      method: mapping.method || "POST",
      headers: mapping.headers as JsonObject | undefined,
      data: mapping.data as JsonObject | undefined,
    });
    if (Array.isArray(request)) problems.push(...request.map((problem) => `${at}.${problem}`));
    const batching = batchingOf(mapping.batching, `${at}.batching`, problems);
    if (trigger instanceof Trigger && !Array.isArray(request)) {
      compiled.push({ name, enabled: mapping.enabled ?? false, trigger, batching, request: (event) => request.request(event) });
    }
  });
  return problems.length > 0 ? { ok: false, problems } : { ok: true, mappings: compiled };
}

function batchingOf(batching: ActionMappingJson["batching"], at: string, problems: string[]): CompiledActionMapping["batching"] {
  if (!batching?.enabled) return undefined;
  const size = batching.size || DEFAULT_BATCH_SIZE;
  const maxWaitMs = batching.maxWaitMs || DEFAULT_BATCH_WAIT_MS;
  if (!Number.isInteger(size) || size < 1 || size > MAX_BATCH_SIZE)
    problems.push(`${at}.size: must be 1-${MAX_BATCH_SIZE} (0: ${DEFAULT_BATCH_SIZE})`);
  if (!Number.isInteger(maxWaitMs) || maxWaitMs < MIN_BATCH_WAIT_MS || maxWaitMs > MAX_BATCH_WAIT_MS) {
    problems.push(`${at}.maxWaitMs: must be ${MIN_BATCH_WAIT_MS}-${MAX_BATCH_WAIT_MS} ms (0: ${DEFAULT_BATCH_WAIT_MS})`);
  }
  return { size, maxWaitMs };
}
