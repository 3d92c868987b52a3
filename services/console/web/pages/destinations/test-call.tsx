import { useState } from "preact/hooks";
import type { LiveCall } from "../../../src/live/view-types";
import type { Source } from "../../api";
import { Field, formatTime } from "../../components";
import { useRecentCalls } from "../../live";

/** Recent calls offered to test with. */
const RECENT_CALLS = 20;
/** The call offered while the source has sent none. */
export const SAMPLE_CALL = { type: "track", event: "Order Completed", userId: "u-1", properties: { total: 12.5 } };

/** The call the tests use: the source's newest (following new ones), one picked, or the text as edited. */
type Choice = { kind: "newest" } | { kind: "picked"; call: LiveCall } | { kind: "edited"; text: string };

export type TestCall = ReturnType<typeof useTestCall>;

/**
 * The call every mapping's preview and test send is made of, by default the newest real call of
 * a connected source (from the live calls feed: the newest stored ones, then each as it arrives).
 */
export function useTestCall(sources: Source[], connected: string[]) {
  // Undefined: the first connected source (or the first source); "": none.
  const [chosenSource, setChosenSource] = useState<string>();
  const sourceId = chosenSource ?? connected[0] ?? sources[0]?.id ?? "";
  const { calls, state } = useRecentCalls(sourceId || undefined, RECENT_CALLS);
  const [choice, setChoice] = useState<Choice>({ kind: "newest" });
  const [error, setError] = useState<string>();

  const shown = choice.kind === "picked" ? choice.call : choice.kind === "newest" ? calls[0] : undefined;
  const text = choice.kind === "edited" ? choice.text : JSON.stringify(shown?.call ?? SAMPLE_CALL, null, 2);

  /** The call as JSON, or undefined (with the reason shown at the field). */
  const parse = (): Record<string, unknown> | undefined => {
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch (caught) {
      setError(`The test call is not valid JSON: ${caught instanceof Error ? caught.message : String(caught)}`);
      return undefined;
    }
    if (typeof value !== "object" || value === null || Array.isArray(value)) {
      setError('The test call must be a JSON object, e.g. {"type": "track", "event": "Order Completed", "userId": "u-1"}');
      return undefined;
    }
    setError(undefined);
    return value as Record<string, unknown>;
  };

  return { sources, connected, sourceId, setSourceId: setChosenSource, calls, state, choice, setChoice, text, error, setError, parse };
}

/** One line for a call in the picker: when, type, event or name, user. */
function describeCall(live: LiveCall): string {
  const call = live.call;
  const what = String(call.event ?? call.name ?? call.groupId ?? "");
  const who = String(call.userId ?? call.anonymousId ?? "");
  return [formatTime(live.receivedAt), `${String(call.type ?? "")}${what ? ` ${what}` : ""}`, who].filter(Boolean).join(" · ");
}

/** Where the test call comes from, and the call as JSON to edit. */
export function TestCallFields({ testCall }: { testCall: TestCall }) {
  const { sources, connected, sourceId, calls, state, choice, text, error } = testCall;
  const picked = choice.kind === "picked" ? choice.call : undefined;
  // A picked call stays offered after newer ones push it off the list.
  const offered = picked && !calls.includes(picked) ? [...calls, picked] : calls;
  const listening =
    sourceId === ""
      ? "No source: edit the call below."
      : state === "live"
        ? `New calls of ${sourceId} are added as they arrive.`
        : state === "reconnecting"
          ? `Reconnecting to the calls of ${sourceId}…`
          : state === "closed"
            ? `The calls of ${sourceId} cannot be followed now.`
            : `Reading the calls of ${sourceId}…`;
  return (
    <fieldset class="test-call">
      <legend>Test call</legend>
      <p class="hint">
        Each mapping's Preview and Send test use this call: by default the newest call of a connected source. Pick another, or edit it as
        JSON (Segment's call shape).
      </p>
      <div class="test-call-source">
        <Field label="Calls of source" hint={listening}>
          {(attributes) => (
            <select
              {...attributes}
              value={sourceId}
              onChange={(event) => {
                testCall.setSourceId(event.currentTarget.value);
                testCall.setChoice({ kind: "newest" });
              }}
            >
              {sources.map((source) => (
                <option key={source.id} value={source.id}>
                  {source.id}
                  {connected.includes(source.id) ? " (connected)" : ""}
                </option>
              ))}
              <option value="">No source</option>
            </select>
          )}
        </Field>
        <Field label="Call">
          {(attributes) => (
            <select
              {...attributes}
              value={choice.kind === "picked" ? `call-${offered.indexOf(choice.call)}` : choice.kind}
              onChange={(event) => {
                const value = event.currentTarget.value;
                const call = value.startsWith("call-") ? offered[Number(value.slice(5))] : undefined;
                testCall.setChoice(call ? { kind: "picked", call } : { kind: "newest" });
                testCall.setError(undefined);
              }}
            >
              <option value="newest">
                {calls.length > 0
                  ? "The newest call (follows new calls)"
                  : `A sample call (no calls${sourceId ? ` of ${sourceId}` : ""} yet)`}
              </option>
              {offered.map((live, index) => (
                <option key={`${String(live.call.messageId)}-${index}`} value={`call-${index}`}>
                  {describeCall(live)}
                </option>
              ))}
              {choice.kind === "edited" && <option value="edited">As edited below</option>}
            </select>
          )}
        </Field>
      </div>
      <Field label="Test call (JSON)" error={error}>
        {(attributes) => (
          <textarea
            {...attributes}
            class="mono"
            rows={10}
            spellcheck={false}
            value={text}
            onInput={(event) => {
              testCall.setChoice({ kind: "edited", text: event.currentTarget.value });
              testCall.setError(undefined);
            }}
          />
        )}
      </Field>
    </fieldset>
  );
}
