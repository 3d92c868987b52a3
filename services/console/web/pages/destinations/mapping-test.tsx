import { useRef, useState } from "preact/hooks";
import type { TestActionMappingResponse } from "../../api";
import { bodyText, HeadersTable, Notice } from "../../components";
import { focusFirstError } from "./setup-form";

/** What became of a preview or a test send. */
export type TestOutcome =
  /** Not tested: the mapping's (or the call's) problems are shown at their fields; `messages` are the rest. */
  | { kind: "refused"; messages: string[] }
  | { kind: "answered"; sent: boolean; answer: TestActionMappingResponse }
  | { kind: "failed"; message: string };

/** A mapping's Preview and Send test, with what came of the last one. */
export function MappingTest(props: {
  onTest: (send: boolean) => Promise<TestOutcome>;
  /** The destination is not saved yet: tests go unsigned. */
  unsaved: boolean;
}) {
  const ref = useRef<HTMLDivElement>(null);
  const [testing, setTesting] = useState<"preview" | "send">();
  const [outcome, setOutcome] = useState<TestOutcome>();

  const test = async (send: boolean) => {
    setTesting(send ? "send" : "preview");
    try {
      const result = await props.onTest(send);
      setOutcome(result);
      // The mapping's first field in error takes the focus.
      if (result.kind === "refused") focusFirstError(ref.current?.closest("fieldset") ?? undefined);
    } finally {
      setTesting(undefined);
    }
  };

  return (
    <div class="mapping-test" ref={ref}>
      <div class="form-actions">
        <button type="button" class="secondary" disabled={testing !== undefined} onClick={() => void test(false)}>
          {testing === "preview" ? "Previewing…" : "Preview"}
        </button>
        <button type="button" class="secondary" disabled={testing !== undefined} onClick={() => void test(true)}>
          {testing === "send" ? "Sending…" : "Send test"}
        </button>
      </div>
      <p class="hint">
        {props.unsaved
          ? "With the test call. Not saved yet: the request goes unsigned."
          : "With the test call, as delivery would make the request: signed with the saved secrets; masked values stand for the saved ones."}{" "}
        Send test sends it once: it is not retried, logged or counted.
      </p>
      <div class="test-result" aria-live="polite">
        {outcome && <TestResult outcome={outcome} />}
      </div>
    </div>
  );
}

/** A preview's request, and a test send's response. */
function TestResult({ outcome }: { outcome: TestOutcome }) {
  if (outcome.kind === "failed") return <Notice kind="error">{outcome.message}</Notice>;
  if (outcome.kind === "refused")
    return (
      <Notice kind="error">
        Not tested: {outcome.messages.length > 0 ? outcome.messages.join("; ") : "the problems are shown at the fields."}
      </Notice>
    );
  const { answer, sent } = outcome;
  const request = answer.request;
  const body = bodyText(request?.requestBody);
  const responseBody = bodyText(request?.responseBody);
  return (
    <div class="attempt-detail">
      <p>
        {answer.taken ? (
          <span class="badge good">The trigger takes this call</span>
        ) : (
          <span class="badge muted">The trigger does not take this call</span>
        )}
        {!answer.taken && <span class="hint"> Delivery would not send it here; this is the request it would make.</span>}
      </p>
      {answer.reason && <Notice kind="warning">No request can be made of this call: {answer.reason}</Notice>}
      {request && (
        <>
          <h3>{sent ? "Request sent" : "Request (not sent)"}</h3>
          <p class="mono wrap" aria-label="Request line">
            {request.method ?? "POST"} {request.url}
          </p>
          <HeadersTable headers={request.requestHeaders} label="Request headers" />
          {body !== "" ? (
            <pre class="json" aria-label="Request body">
              {body}
            </pre>
          ) : (
            <p class="hint">No body (the data mapped to nothing).</p>
          )}
        </>
      )}
      {sent && !answer.reason && (
        <>
          <h3>Response</h3>
          <p aria-label="Response status">
            {answer.status ? `Status ${answer.status}` : "No response"} in {answer.latencyMs ?? 0} ms
          </p>
          {answer.error && <p class="bad-text">{answer.error}</p>}
          {answer.status ? (
            <>
              <HeadersTable headers={request?.responseHeaders} label="Response headers" />
              {responseBody !== "" ? (
                <pre class="json" aria-label="Response body">
                  {responseBody}
                </pre>
              ) : (
                <p class="hint">Empty body.</p>
              )}
              {request?.responseBodyTruncated && <p class="hint">The body went on: only its first 4 KB are kept.</p>}
            </>
          ) : null}
        </>
      )}
    </div>
  );
}
