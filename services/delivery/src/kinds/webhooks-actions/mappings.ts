import { callEvent, compileActionMappings, type CompiledActionMapping, type JsonObject } from "@switchyard/mappings";
import type { ActionsDestination } from "@switchyard/workspace";
import type { OutgoingCall } from "../../pipeline/outgoing-calls.js";

/**
 * A destination's mappings as delivery applies them: compiled once per settings object (a changed
 * destination brings a new one), and each call's event (the call in Segment's shape, what triggers
 * and mappings read) made once for all of a call's mappings and destinations.
 */

/** The compiled mappings, by position; a stored record failing to compile (rules added since it was stored) has none. */
const compiledMappings = new WeakMap<ActionsDestination["settings"], readonly (CompiledActionMapping | undefined)[]>();

/** Why a stored destination's mappings do not compile, by settings object: every call fails for good with it. */
const compileProblems = new WeakMap<ActionsDestination["settings"], string>();

export function mappingsOf(destination: ActionsDestination): readonly (CompiledActionMapping | undefined)[] {
  const settings = destination.settings;
  let mappings = compiledMappings.get(settings);
  if (!mappings) {
    const compiled = compileActionMappings(settings.mappings);
    if (compiled.ok) mappings = compiled.mappings;
    else {
      mappings = settings.mappings.map(() => undefined);
      compileProblems.set(settings, compiled.problems.join("; "));
    }
    compiledMappings.set(settings, mappings);
  }
  return mappings;
}

/** Why no mapping of the destination can be applied; undefined when they compiled. */
export function mappingsProblem(destination: ActionsDestination): string | undefined {
  mappingsOf(destination);
  return compileProblems.get(destination.settings);
}

const events = new WeakMap<OutgoingCall, JsonObject>();

/** The call as triggers and mappings read it. */
export function eventOf(call: OutgoingCall): JsonObject {
  let event = events.get(call);
  if (!event) {
    event = callEvent(call.call());
    events.set(call, event);
  }
  return event;
}
